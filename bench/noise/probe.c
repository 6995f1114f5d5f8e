/* The machine probe bench/noise.sh runs beside each lab (PROBE=1): every PERIOD ms (argument,
 * default 50) a fixed unit of work in three parts, each timed on the thread's own CPU clock, so a
 * slower moment of the machine shows as more nanoseconds for the same work: integer arithmetic,
 * a walk of 4 MiB of memory in random order, and 300 writes and reads of a pipe (the kernel).
 * Prints one line per unit: unix ms, the three parts' CPU ns, the unit's wall ns. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
static volatile int stop = 0;
static void on(int s){(void)s;stop=1;}
static uint64_t ns(clockid_t c){struct timespec t;clock_gettime(c,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
int main(int argc,char**argv){
  signal(SIGTERM,on); signal(SIGINT,on);
  int period_ms = argc>1?atoi(argv[1]):50;
  size_t n = 1<<20; uint32_t *buf = malloc(n*4); for(size_t i=0;i<n;i++) buf[i]=(uint32_t)(i*2654435761u);
  int p[2]; if(pipe(p)) return 1; char b[64]={0};
  uint64_t x=88172645463325252ull, sink=0;
  setvbuf(stdout,NULL,_IOLBF,0);
  while(!stop){
    uint64_t w0=ns(CLOCK_MONOTONIC), c0=ns(CLOCK_THREAD_CPUTIME_ID);
    for(int i=0;i<300000;i++){x^=x<<13;x^=x>>7;x^=x<<17;sink+=x*(x>>3);}            // ALU
    uint64_t c1=ns(CLOCK_THREAD_CPUTIME_ID);
    uint32_t j=1; for(int i=0;i<20000;i++){j=buf[(j*1103515245u+12345u)&(n-1)]; sink+=j;} // memory
    uint64_t c2=ns(CLOCK_THREAD_CPUTIME_ID);
    for(int i=0;i<300;i++){ if(write(p[1],b,64)!=64||read(p[0],b,64)!=64) return 1; } // kernel
    uint64_t c3=ns(CLOCK_THREAD_CPUTIME_ID), w1=ns(CLOCK_MONOTONIC);
    printf("%llu %llu %llu %llu %llu\n",(unsigned long long)(ns(CLOCK_REALTIME)/1000000),(unsigned long long)(c1-c0),(unsigned long long)(c2-c1),(unsigned long long)(c3-c2),(unsigned long long)(w1-w0));
    usleep(period_ms*1000);
  }
  fprintf(stderr,"%llu\n",(unsigned long long)sink);
  return 0;
}
