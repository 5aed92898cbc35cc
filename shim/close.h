/* SPDX-License-Identifier: BSD-2-Clause */
/* close.h - forgetting a descriptor (close.c): what the table entry
 * carries (a held connect, request state) is freed here, by the one file
 * that knows them all, so fd.c knows none of them. */
#ifndef SL_CLOSE_H
#define SL_CLOSE_H

/* Forgets fd (close, a failed connect): frees what its entry carries, then
 * the entry itself (fd.h: sl_fd_forget). */
void sl_fd_drop(int fd);

#endif
