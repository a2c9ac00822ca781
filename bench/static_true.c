/* SPDX-License-Identifier: Apache-2.0 */
/* static_true.c - /bin/true, statically linked (bench/fork_cost.c). */
int main(void)
{
	return 0;
}
