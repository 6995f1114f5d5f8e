// A target for the profiling tests: each request spends its time in two named functions,
// burnAlpha and burnBeta, for as many thousand rounds as its X-Alpha and X-Beta headers say.
// It serves Go's pprof endpoints too (/debug/pprof/profile), a 404 elsewhere, and a body that
// is no profile at /garbage.
package main

import (
	"fmt"
	"net/http"
	_ "net/http/pprof"
	"os"
	"strconv"
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
	if err := http.ListenAndServe(os.Args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
