/*
 * Manual pages generated from the directive table (as docs/config.md is): tlsgate.conf(5),
 * the configuration reference, and tlsgate(8), the command line. Rendered by the program
 * conf_man at build time (dist/dist.cmake) and installed by the Debian package.
 */
#ifndef GW_CONF_MAN_H
#define GW_CONF_MAN_H

/**
 * Write the man(7) source of tlsgate.conf(5) (section 5) or tlsgate(8) (section 8) to fp
 * (a FILE *). version appears in the page footer (e.g. "0.1.0"). Markdown in the table's
 * texts (`code`, *argument*, \|) becomes roff fonts; roff's special characters and
 * non-ASCII characters are escaped, so that `groff -man -ww` reports no warning.
 * Returns 0, or -1 on an I/O error or an unknown section.
 */
int gw_conf_write_man(void *fp /* FILE * */, int section, const char *version);

#endif
