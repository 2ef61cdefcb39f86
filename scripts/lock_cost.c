// What a locked instruction costs on this machine when no other core wants
// the line: a loop of a plain store and load, the same with a `lock or` to
// the stack between them (the registration fence of a block), and a
// `lock cmpxchg` (a wake's claim of a slot). Prints ns per iteration, three
// times. Build and run: cc -O2 -o /tmp/lock_cost scripts/lock_cost.c && /tmp/lock_cost
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  const long n = 100000000;
  volatile uint64_t x = 0;
  uint64_t v = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    for (long i = 0; i < n; i++) {
      x = i;
      __asm__ volatile("" ::: "memory");
      v += x;
    }
    double t1 = now();
    for (long i = 0; i < n; i++) {
      x = i;
      __asm__ volatile("lock orq $0,(%%rsp)" ::: "memory");
      v += x;
    }
    double t2 = now();
    for (long i = 0; i < n; i++) {
      uint64_t e = i;
      __atomic_compare_exchange_n(&x, &e, i + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    double t3 = now();
    printf("store+load %.2f ns, store+lock or+load %.2f ns, lock cmpxchg %.2f ns\n",
           (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9, (t3 - t2) / n * 1e9);
  }
  return (int)(v & 1);
}
