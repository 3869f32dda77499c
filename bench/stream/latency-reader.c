/* latency-reader: reads a consumer's output on stdin and, for each `@T<19 digits>@` in it (the
 * CLOCK_MONOTONIC time at which bench/stream/server.py wrote the event), the time of the read
 * that brought the mark's end in minus that time, in ns, one per line to stdout at end of file.
 * It only reads and stamps while the stream runs; the figures are printed at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MARK = 22 };

int main(void) {
    static char buffer[1 << 20];
    size_t kept = 0, count = 0, room = 1 << 16;
    long long *latencies = malloc(room * sizeof *latencies);
    for (;;) {
        ssize_t got = read(0, buffer + kept, sizeof buffer - kept);
        if (got <= 0) break;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long at = now.tv_sec * 1000000000LL + now.tv_nsec;
        size_t end = kept + (size_t)got, scanned = 0;
        for (char *mark = buffer; (mark = memchr(mark, '@', end - (size_t)(mark - buffer))) != NULL;) {
            size_t offset = (size_t)(mark - buffer);
            if (end - offset < MARK) break;
            if (mark[1] == 'T' && mark[MARK - 1] == '@') {
                long long stamp = strtoll(mark + 2, NULL, 10);
                if (count == room) latencies = realloc(latencies, (room *= 2) * sizeof *latencies);
                latencies[count++] = at - stamp;
                mark += MARK;
            } else {
                mark += 1;
            }
            scanned = (size_t)(mark - buffer);
        }
        /* Keep an unfinished mark (at most MARK - 1 bytes) for the next read. */
        size_t from = end > MARK ? end - (MARK - 1) : 0;
        if (from < scanned) from = scanned;
        memmove(buffer, buffer + from, end - from);
        kept = end - from;
    }
    for (size_t i = 0; i < count; i++) printf("%lld\n", latencies[i]);
    return 0;
}
