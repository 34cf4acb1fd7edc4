/* SPDX-License-Identifier: MIT */
/*
 * banned.h: functions that are too easy to misuse.  Every internal header
 * includes this file, so a call to one of them fails to compile.  Use
 * snprintf, memcpy with an explicit length, or the tok_buf helpers instead.
 */
#ifndef BANNED_H
#define BANNED_H

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef gmtime
#define gmtime(t) BANNED(gmtime)
#undef localtime
#define localtime(t) BANNED(localtime)
#undef atoi
#define atoi(s) BANNED(atoi)

#endif /* BANNED_H */
