/* SPDX-License-Identifier: MIT */
/*
 * scaffold.h: kcr-gen's scaffolding commands (scaffold.c). Each takes the
 * arguments after its command word and returns the exit status: 0, 1 on an
 * error (one line on stderr, nothing written), 2 on a bad command line.
 */
#ifndef KCR_GEN_SCAFFOLD_H
#define KCR_GEN_SCAFFOLD_H

/* gen_scaffold_init: `kcr-gen init [--domain D] [--project-name N] [DIR]`. */
int gen_scaffold_init(int argc, char **argv);

/* gen_scaffold_create: `kcr-gen create api --group G --version V --kind K ...`. */
int gen_scaffold_create(int argc, char **argv);

#endif
