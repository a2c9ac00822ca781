/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_demangle.c - ember__demangle() on C++, Rust legacy, Rust v0 and
 * plain C names.
 *
 * The C++ names are what g++ 12 emits for tests/fixtures/widget.cpp and for
 * common library code. The Rust names were produced once on this machine
 * with rustc 1.95.0 from this source:
 *
 *     pub mod shapes {
 *         pub struct Circle { pub r: f64 }
 *         impl Circle {
 *             #[inline(never)]
 *             pub fn area(&self) -> f64 { 3.14159 * self.r * self.r }
 *         }
 *         #[inline(never)]
 *         pub fn make<T: Clone>(x: &T) -> Vec<T> { vec![x.clone(), x.clone()] }
 *     }
 *     #[inline(never)]
 *     pub fn use_it(r: f64) -> f64 {
 *         let c = shapes::Circle { r }; c.area() + shapes::make(&r).len() as f64
 *     }
 *
 * compiled with `rustc --crate-type=lib --emit=obj -C opt-level=1 lib.rs`
 * (legacy mangling, the default) and again with
 * `-C symbol-mangling-version=v0`; `nm` printed the symbols below.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "symbols/demangle.h"

static void expect(const char *mangled, const char *want)
{
	char *got = ember__demangle(mangled);
	if (want) {
		CHECK_EQ_STR(got, want);
	} else if (got) {
		fprintf(stderr, "expected no demangling of %s, got %s\n", mangled, got);
		CHECK(got == NULL);
	}
	free(got);
}

static void test_cxx(void)
{
	expect("_ZN2ns6Widget4spinEi", "ns::Widget::spin(int)");
	expect("_ZL5twirli", "twirl(int)");
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi",
	       "std::vector<int, std::allocator<int> >::push_back(int const&)");
	expect("_ZNK2ns6Widget5countEv", "ns::Widget::count() const");
	/* GCC clone suffixes stay visible. */
	expect("_ZN2ns6Widget4spinEi.cold", "ns::Widget::spin(int) [clone .cold]");
	expect("_ZN2ns6Widget4spinEi.constprop.0",
	       "ns::Widget::spin(int) [clone .constprop.0]");
}

static void test_rust_legacy(void)
{
	/* The trailing h<16 hex> hash is dropped, as rustc-demangle does. */
	expect("_ZN3lib6shapes6Circle4area17h8d51984be1a0c6bfE", "lib::shapes::Circle::area");
	expect("_ZN3lib6use_it17h36d503a0cb68d326E", "lib::use_it");
	expect("_ZN3lib6shapes4make17h693c4f5cd11e6963E", "lib::shapes::make");
	expect("_ZN70_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$"
	       "4drop17ha39d8393211f5837E",
	       "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop");
}

static void test_rust_v0(void)
{
	expect("_RNvMNtCsh537bOAIRKx_3lib6shapesNtB2_6Circle4area",
	       "<lib::shapes::Circle>::area");
	expect("_RNvCsh537bOAIRKx_3lib6use_it", "lib::use_it");
	expect("_RINvNtCsh537bOAIRKx_3lib6shapes4makedEB4_", "lib::shapes::make::<f64>");
	expect("_RNvXso_NtCslNYArtu3iFV_5alloc3vecINtB5_3VecdENtNtNtCsgEmfK2I1SDS_4core3ops4drop"
	       "4Drop4dropCsh537bOAIRKx_3lib",
	       "<alloc::vec::Vec<f64> as core::ops::drop::Drop>::drop");
}

static void test_not_mangled(void)
{
	expect("main", NULL);
	expect("printf", NULL);
	expect("__libc_start_main", NULL);
	expect("_start", NULL);
	expect("", NULL);
	expect(NULL, NULL);
	/* Looks mangled but is not valid. */
	expect("_Z", NULL);
	expect("_ZN3foo", NULL);
	expect("_RNvC", NULL);
}

int main(void)
{
	RUN(test_cxx);
	RUN(test_rust_legacy);
	RUN(test_rust_v0);
	RUN(test_not_mangled);
	return CHECK_DONE();
}
