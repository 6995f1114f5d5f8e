// A service instrumented with the OpenTelemetry SDK for Go as its authors would: otelhttp's
// server span per request continuing the caller's trace (W3C traceparent), a db.query span
// inside it that takes 2 ms, or 40 ms for every SLOW_EVERY-th request, and a render span of
// 1 ms. Spans go out through the SDK's batch processor and OTLP/HTTP exporter, configured only
// by the standard variables (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_SERVICE_NAME, OTEL_BSP_SCHEDULE_DELAY).
//
// Usage: traced ADDR [SLOW_EVERY]
package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: traced ADDR [SLOW_EVERY]")
	}
	slowEvery := uint64(33)
	if len(os.Args) > 2 {
		n, err := strconv.ParseUint(os.Args[2], 10, 64)
		if err != nil || n == 0 {
			log.Fatalf("SLOW_EVERY: %q is not a positive count", os.Args[2])
		}
		slowEvery = n
	}
	ctx := context.Background()
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		log.Fatal(err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	tracer := otel.Tracer("traced-app")

	var count atomic.Uint64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := count.Add(1)
		_, db := tracer.Start(r.Context(), "db.query")
		if n%slowEvery == 0 {
			time.Sleep(40 * time.Millisecond)
		} else {
			time.Sleep(2 * time.Millisecond)
		}
		db.End()
		_, render := tracer.Start(r.Context(), "render")
		time.Sleep(time.Millisecond)
		render.End()
		w.Write([]byte("ok"))
	})
	server := &http.Server{Addr: os.Args[1], Handler: otelhttp.NewHandler(handler, "GET /")}
	go func() {
		if err := server.ListenAndServe(); err != http.ErrServerClosed {
			log.Fatal(err)
		}
	}()
	// The lab stops its targets with SIGTERM: the spans still batched go out first.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	<-stop
	shutdown, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	server.Shutdown(shutdown)
	provider.Shutdown(shutdown)
}
