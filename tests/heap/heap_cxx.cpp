/* SPDX-License-Identifier: Apache-2.0 */
// heap_cxx.cpp - a C++ program for the LD_PRELOAD allocation test
// (tests/cli/test_heap_preload.sh): new and delete (which reach malloc
// and free through libstdc++) from two call sites in a 3:1 byte ratio,
// std::vector growth, and threads. It knows nothing of emberprof.
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

struct Big {
	char bytes[96];
};
struct Small {
	char bytes[32];
};

__attribute__((noinline)) Big *make_big()
{
	Big *b = new Big;
	asm volatile("" : : "r"(b) : "memory");
	return b;
}

__attribute__((noinline)) Small *make_small()
{
	Small *s = new Small;
	asm volatile("" : : "r"(s) : "memory");
	return s;
}

static void work(int n, std::vector<Big *> *bigs, std::vector<Small *> *smalls)
{
	for (int i = 0; i < n; i++) {
		bigs->push_back(make_big());
		smalls->push_back(make_small());
		std::memset(bigs->back()->bytes, 1, sizeof(Big));
		if (i % 500 == 499)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
}

int main()
{
	const int per_thread = 25000;
	std::vector<Big *> bigs[2];
	std::vector<Small *> smalls[2];
	std::thread t(work, per_thread, &bigs[1], &smalls[1]);
	work(per_thread, &bigs[0], &smalls[0]);
	t.join();
	for (int k = 0; k < 2; k++) {
		for (Big *b : bigs[k])
			delete b;
		for (Small *s : smalls[k])
			delete s;
	}
	std::printf("heap_cxx done\n");
	return 0;
}
