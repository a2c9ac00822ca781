// SPDX-License-Identifier: Apache-2.0
// sym_cxx.cpp - the C++ program of the symbolize tests: a template and a
// class method (mangled names, demangled in profiles), an inlined
// template call, a namespace. Built by the tests at -O2 -g, then stripped.
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace symfx {

template <typename T> inline __attribute__((always_inline)) T step(T x)
{
	return x * 2654435761u ^ (x >> 13);
}

class Mixer {
public:
	__attribute__((noinline)) unsigned long run(unsigned long n);

private:
	std::vector<unsigned long> acc_ = std::vector<unsigned long>(16);
};

unsigned long Mixer::run(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++) {
		s += step<unsigned long>(i + s);
		acc_[i & 15] += s;
	}
	return s + acc_[3];
}

} // namespace symfx

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000000ul;
	symfx::Mixer m;
	std::printf("%lu\n", m.run(n));
	return 0;
}
