// What one cache line's move between two cores costs on this machine, the
// floor under a stream hop that crosses workers. Two threads pinned to
// cores 0 and 1 pass a counter back and forth N times; the value passed
// with it sits on the counter's line (mode 0), on the line after it
// (mode 1: the pair of lines a core fetches together) or on a line
// elsewhere (mode 2). Prints ns per round trip (two moves of each line).
// Each wait has a pause between looks, as rill's spins (and rill-bench's
// own line round trip, examples/src/line.rs) do: a core that looks without
// pausing slows the writer's claim of the line (122 ns a round trip in
// mode 0 against 77-83 with the pause, same cores, same minute).
// Build and run: scripts/line_pingpong.sh
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <immintrin.h>
// mode 0: flag and data in one line; 1: data in a separate line (adjacent, same 128B pair); 2: data far away
struct chan { _Alignas(128) _Atomic long flag; long inl; char pad[112]; };
static struct chan *P, *Q; static long *Pd, *Qd; static long N; static int mode;
static double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
static void pin(int c){cpu_set_t s; CPU_ZERO(&s); CPU_SET(c,&s); pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void *pong(void*a){ pin(1); for(long i=1;i<=N;i++){ while(atomic_load_explicit(&P->flag,memory_order_acquire)!=i) _mm_pause(); long v = mode==0? P->inl : *Pd; if(mode==0) Q->inl=v; else *Qd=v; atomic_store_explicit(&Q->flag,i,memory_order_release);} return 0; }
int main(int c,char**v){ mode=atoi(v[1]); N=atol(v[2]); P=aligned_alloc(128,256); Q=aligned_alloc(128,256);
 long *far=aligned_alloc(128, 1<<20); Pd = mode==1? (long*)((char*)P+64) : far; Qd = mode==1? (long*)((char*)Q+64) : far+4096;
 atomic_store(&P->flag,0); atomic_store(&Q->flag,0); pthread_t t; pthread_create(&t,0,pong,0); pin(0);
 double t0=now(); for(long i=1;i<=N;i++){ if(mode==0) P->inl=i; else *Pd=i; atomic_store_explicit(&P->flag,i,memory_order_release); while(atomic_load_explicit(&Q->flag,memory_order_acquire)!=i) _mm_pause(); long r= mode==0? Q->inl : *Qd; if(r!=i) abort(); }
 double d=now()-t0; pthread_join(t,0); printf("mode %d: %.1f ns per round trip\n", mode, d/N*1e9); }
