/* The pod sandbox's process for the test-bed cluster: sleeps until TERM or INT, reaps
 * children (it is PID 1 of the pod). Built with `gcc -static` into the bed's pause image. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = reap;
    sigaction(SIGCHLD, &sa, NULL);
    for (;;) pause();
    return 0;
}
