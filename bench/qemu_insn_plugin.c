/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qemu_insn_plugin.c - a qemu TCG plugin (built for the host, loaded with
 * qemu-aarch64 -plugin) that counts the guest instructions a program
 * executes and prints the total at exit: "insns N". Every translated block
 * adds its instruction count to one counter each time it runs (an inline
 * add, no callback). Used by bench/unwind_insns.sh; single-threaded
 * guests only (the inline add is not atomic across vCPUs).
 *
 * Debian's qemu-user ships the plugin API in its binary but no header and
 * no example plugins, so the few entry points used are declared here as
 * documented in QEMU's docs/devel/tcg-plugins.rst (plugin API version 1).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb *));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t, void *),
				    void *userdata);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t insns;

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns,
						 qemu_plugin_tb_n_insns(tb));
}

static void on_exit_cb(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	char buf[64];
	snprintf(buf, sizeof(buf), "insns %" PRIu64 "\n", insns);
	qemu_plugin_outs(buf);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
								const qemu_info_t *info, int argc,
								char **argv)
{
	(void)info;
	(void)argc;
	(void)argv;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
	return 0;
}
