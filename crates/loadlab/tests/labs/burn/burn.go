// A target for the profiling tests: each request spends its time in two named functions,
// burnAlpha and burnBeta, for as many thousand rounds as its X-Alpha and X-Beta headers say.
// It serves Go's pprof endpoints too (/debug/pprof/profile), a 404 elsewhere, a body that
// is no profile at /garbage, and at /metrics its process's CPU and resident memory as the
// Prometheus clients export them (process_cpu_seconds_total, from /proc/self/stat's ticks).
package main

import (
	"fmt"
	"net/http"
	_ "net/http/pprof"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

var sink atomic.Uint64

//go:noinline
func burnAlpha(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func burnBeta(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = x*2862933555777941757 + 3037000493
	}
	return x
}

func rounds(r *http.Request, name string) int {
	n, _ := strconv.Atoi(r.Header.Get(name))
	return n * 1000
}

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		sink.Add(burnAlpha(rounds(r, "X-Alpha")) + burnBeta(rounds(r, "X-Beta")))
		fmt.Fprint(w, "ok")
	})
	http.HandleFunc("/garbage", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "this is not a profile")
	})
	http.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		stat, err := os.ReadFile("/proc/self/stat")
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		// The fields after the command's closing parenthesis: utime and stime are the 12th
		// and 13th, rss (pages) the 22nd.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		rss, _ := strconv.ParseFloat(f[21], 64)
		fmt.Fprintf(w, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n")
		fmt.Fprintf(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n", (utime+stime)/100)
		fmt.Fprintf(w, "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %g\n", rss*float64(os.Getpagesize()))
	})
	if err := http.ListenAndServe(os.Args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
