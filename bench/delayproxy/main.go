// Command delayproxy forwards TCP connections to one address and delays
// every byte by a fixed time in each direction, without limiting
// throughput: a delay line, for measuring weft over a link with a round
// trip time where the kernel's netem is not available
// (bench/b3_delay.sh). Each direction of each connection is a reader that
// stamps what it reads and a writer that sends it once its time has come,
// so data in flight is bounded only by the queue (4,096 reads).
//
// usage: delayproxy -listen ADDR -to ADDR -delay 10ms
package main

import (
	"flag"
	"io"
	"log"
	"net"
	"time"
)

func main() {
	listen := flag.String("listen", "", "address to listen on (host:port)")
	to := flag.String("to", "", "address to forward to (host:port)")
	delay := flag.Duration("delay", 10*time.Millisecond, "one-way delay added in each direction")
	flag.Parse()
	if *listen == "" || *to == "" {
		log.Fatal("delayproxy: -listen and -to are required")
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	for {
		in, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			out, err := net.Dial("tcp", *to)
			if err != nil {
				log.Print(err)
				in.Close()
				return
			}
			go pipe(in, out, *delay)
			go pipe(out, in, *delay)
		}()
	}
}

// stamped is one read, to be written at due.
type stamped struct {
	due  time.Time
	data []byte
}

// pipe copies src to dst, each read delayed by d; it closes dst's write
// side (or dst) when src ends.
func pipe(src, dst net.Conn, d time.Duration) {
	q := make(chan stamped, 4096)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- stamped{time.Now().Add(d), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for s := range q {
		time.Sleep(time.Until(s.due))
		if _, err := dst.Write(s.data); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		dst.Close()
	}
	_, _ = io.Copy(io.Discard, src)
}
