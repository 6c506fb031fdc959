// progress.h: a one-line indication on stderr that long work is under way (tools/progress.c).
#ifndef MSP_TOOLS_PROGRESS_H
#define MSP_TOOLS_PROGRESS_H

// Show progress at all: only when stderr is a terminal and neither --json nor --quiet was given
// (parse_options decides).
void progress_enable(int on);
// From about a second after this call until progress_stop, a line "WHAT ... N s" on stderr,
// refreshed twice a second. One at a time; WHAT is copied.
void progress_start(const char *what);
// Stop and erase the line (nothing was printed for work shorter than a second).
void progress_stop(void);

#endif
