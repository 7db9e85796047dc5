// SPDX-License-Identifier: MIT

// clientgo_watch decodes watch streams exactly as client-go's dynamic client
// does after the HTTP response arrives: the JSON framer, the streaming decoder
// into metav1.WatchEvent, then each event's object into an
// unstructured.Unstructured (rest/watch.Decoder). It reads the files that
// bench_watch -w writes, delivers them in 16 KiB reads like an HTTP body, and
// prints MB/s and ns/event (median of 7 runs) for BENCH.md U3.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// chunkReader hands out at most n bytes per Read, as a network body does.
type chunkReader struct {
	r *bytes.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

func (c *chunkReader) Close() error { return nil }

func decodeOnce(data []byte, ser runtime.Serializer) (time.Duration, int) {
	body := &chunkReader{bytes.NewReader(data), 16384}
	start := time.Now()
	frames := json.Framer.NewFrameReader(body)
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frames, ser), unstructured.UnstructuredJSONScheme)
	n := 0
	for {
		_, obj, err := dec.Decode()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "decode:", err)
			os.Exit(1)
		}
		if _, ok := obj.(*unstructured.Unstructured); !ok {
			fmt.Fprintf(os.Stderr, "decode: got %T\n", obj)
			os.Exit(1)
		}
		n++
	}
	return time.Since(start), n
}

func main() {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	ser := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{})
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var times []time.Duration
		var events int
		for i := 0; i < 7; i++ {
			d, n := decodeOnce(data, ser)
			times = append(times, d)
			events = n
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		med := times[len(times)/2].Seconds()
		mb := float64(len(data)) / 1e6
		fmt.Printf("%-40s client-go dynamic decode  %8.1f MB/s  %7.0f ns/event  (min-max %.1f-%.1f MB/s, %d events)\n",
			path, mb/med, med*1e9/float64(events), mb/times[len(times)-1].Seconds(), mb/times[0].Seconds(), events)
	}
}
