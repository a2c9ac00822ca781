/* static_true.c - /bin/true, statically linked (bench/fork_cost.c). */
int main(void)
{
	return 0;
}
