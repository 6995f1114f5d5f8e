package main

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sum := [32]byte{}
		for i := 0; i < rounds; i++ {
			sum = sha256.Sum256(sum[:])
		}
		fmt.Fprintf(w, "%x\n", sum[:4])
	})
	http.ListenAndServe(os.Args[1], nil)
}
