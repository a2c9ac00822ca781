/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ownfd.h - long-lived descriptors the agent keeps inside a program that
 * may close or dup2() over any descriptor it did not open (daemons close
 * everything at start; closefrom(3), close_range(3, ~0U)).
 *
 * An owned descriptor is moved to EMBER_OWNFD_MIN or above (out of the
 * range programs reuse first) with FD_CLOEXEC, and its identity is kept:
 * the file's device and inode. Before each use the owner checks it: if
 * the number no longer names the same file with FD_CLOEXEC set, the
 * program closed it (and may have reused the number for a file of its
 * own): we forget the number without closing it - it is the program's
 * now - and the owner reopens by path and counts the reopen. A program
 * that reopens the very same file at the same number with FD_CLOEXEC is
 * indistinguishable; that costs nothing but sharing the number.
 *
 * A check and the use that follows are two system calls, so a program
 * that closes descriptors on another thread at that very moment can still
 * race with us, as with any library's short-lived open(); the check closes
 * the window that matters: a descriptor lost long ago is never used.
 *
 * Not async-signal-safe in intent (agent-owned threads), though every
 * function calls only fcntl(2), fstat(2) and close(2).
 */
#ifndef EMBER_OWNFD_H
#define EMBER_OWNFD_H

#include <dirent.h>
#include <sys/types.h>

#define EMBER_OWNFD_MIN 256

typedef struct ember__ownfd {
	int fd;    /* -1: none */
	dev_t dev;
	ino_t ino;
} ember__ownfd;

#define EMBER_OWNFD_NONE {-1, 0, 0}

/*
 * Moves fd to EMBER_OWNFD_MIN or above and sets FD_CLOEXEC, for a
 * descriptor a library keeps for us (libdwfl's debug files) whose identity
 * we cannot check before its uses: out of the low numbers a program
 * expects its own open() to return, and never inherited by what it execs.
 * Returns the descriptor now to use (fd itself when it cannot be moved);
 * -1 for -1.
 */
int ember__ownfd_raise(int fd);

/*
 * Takes ownership of fd (closed on failure): moves it to EMBER_OWNFD_MIN
 * or above with FD_CLOEXEC where possible (else keeps it where it is) and
 * records its identity. Returns the descriptor now in o->fd, or -1 with
 * errno (o->fd is then -1).
 */
int ember__ownfd_adopt(ember__ownfd *o, int fd);

/*
 * Is o->fd still the descriptor we adopted? 1 yes; 0 no: o->fd is set to
 * -1 without closing the number (the program's now), or there was none.
 */
int ember__ownfd_check(ember__ownfd *o);

/* Closes o->fd if it is still ours (never a number the program reused). */
void ember__ownfd_close(ember__ownfd *o);

/*
 * For a descriptor held inside a DIR stream (opened with O_CLOEXEC):
 * does fd still name the file at `path`, with FD_CLOEXEC set? 1 or 0.
 */
int ember__ownfd_is_path(int fd, const char *path);

/*
 * Lets go of a DIR stream whose descriptor may now be the program's:
 * closedir() when the number is closed (nothing to take from anyone),
 * else the stream is left allocated, its number untouched. NULL is fine.
 */
void ember__ownfd_abandon_dir(DIR *d);

#endif
