package reconcile

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wap5/nat"
)

func TestReorder(t *testing.T) {
	const w = 100
	for _, tc := range []struct {
		name string
		in   []int64 // packet times, in file order
		want string  // times as handed on, with the file index
		late int
	}{
		{name: "sorted", in: []int64{1, 2, 3, 300}, want: "1@0 2@1 3@2 300@3"},
		{name: "within the window", in: []int64{50, 10, 30, 30, 200, 120}, want: "10@1 30@2 30@3 50@0 120@5 200@4"},
		{name: "equal times keep file order", in: []int64{5, 5, 5}, want: "5@0 5@1 5@2"},
		{name: "straggler beyond the window", in: []int64{10, 500, 700, 20}, want: "10@0 500@1 500@3 700@2", late: 1},
		{name: "empty", in: nil, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			r := newReorder(w, func(b []nat.Packet) bool {
				for _, p := range b {
					got = append(got, fmt.Sprintf("%d@%d", p.Time, p.Index))
				}
				return true
			})
			for i, tm := range tc.in {
				if !r.add([]nat.Packet{{Time: tm, Index: int32(i)}}) {
					t.Fatal("add stopped")
				}
			}
			r.flush()
			if s := strings.Join(got, " "); s != tc.want || r.late != tc.late {
				t.Errorf("got %q late %d, want %q late %d", s, r.late, tc.want, tc.late)
			}
		})
	}
}

// The passes before the replay keep a bounded sample per conversation and
// the handshakes, not the packets: a longer connection costs them nothing.
func TestFirstPassBounded(t *testing.T) {
	a, b := netip.MustParseAddrPort(cli), netip.MustParseAddrPort(srv)
	for _, n := range []int{10, 1000, 100000} {
		c := &Capture{File: "long"}
		c.Packets = append(c.Packets,
			nat.Packet{Time: 0, Src: a, Dst: b, Proto: nat.ProtoTCP, Flags: nat.FlagSYN, Seq: 99, TTL: 64},
			nat.Packet{Time: 1, Src: b, Dst: a, Proto: nat.ProtoTCP, Flags: nat.FlagSYN | nat.FlagACK, Seq: 7, Ack: 100, TTL: 64})
		for i := range n {
			c.Packets = append(c.Packets, nat.Packet{Time: int64(2 + i), Src: a, Dst: b, Proto: nat.ProtoTCP, Flags: nat.FlagACK,
				Seq: 100 + uint32(i)*10, Ack: 8, Len: 10, TTL: 64})
		}
		fp, err := readFirstPass(memFeed{c, int64(DefaultPacketReorder)})
		if err != nil {
			t.Fatal(err)
		}
		if len(fp.sample) > natSample || len(fp.syns) != 2 || len(fp.eps) != 2 || len(fp.data) != 1 {
			t.Errorf("%d packets: sample %d (max %d), handshakes %d, endpoints %d, data conversations %d",
				n, len(fp.sample), natSample, len(fp.syns), len(fp.eps), len(fp.data))
		}
	}
}

// Captures streamed from files give the same observations as the same
// captures read into memory, through NAT (two capture points), with a
// capture that starts mid-stream (pass S2), and with pcapng.
func TestOpenPcapsStreamsFiles(t *testing.T) {
	a, b := sideCaptures(t, [2]string{cli, "10.201.1.100:80"}, [2]string{"10.201.2.1:40000", srv})
	conv := conversation(cli, srv, 64, 64, 1000, 5000)
	mid := writeCapture(t, fmtPcapng, linkEthernet, conv[3:])
	for _, tc := range []struct {
		name string
		caps [][]byte
	}{
		{"nat two sides", [][]byte{a, b}},
		{"mid-stream pcapng", [][]byte{mid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for i, data := range tc.caps {
				p := filepath.Join(dir, fmt.Sprintf("cap%d", i))
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			fromFiles, err := OpenPcaps(paths, Options{}, names)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(strings.Join(observations(t, fromFiles), "\n"), dir+"/", "")
			want := strings.Join(observations(t, sources(t, Options{}, names, tc.caps...)), "\n")
			if got != want {
				t.Errorf("from files:\n%s\nin memory:\n%s", got, want)
			}
			if len(want) == 0 || !strings.Contains(want, "recv") {
				t.Errorf("no receives in\n%s", want)
			}
		})
	}
}

// TestWriteBenchCaptures writes the synthetic captures bench/packets-stream.sh
// reconciles (1x and 10x the requests over the same connections) when
// WAP5_PCAP_BENCH_DIR names a directory; otherwise it is skipped.
func TestWriteBenchCaptures(t *testing.T) {
	dir := os.Getenv("WAP5_PCAP_BENCH_DIR")
	if dir == "" {
		t.Skip("WAP5_PCAP_BENCH_DIR not set")
	}
	for _, x := range []int{1, 10} {
		data := bigCapture(t, 20, 500*x)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("synthetic-x%d.pcap", x)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzReorder: whatever the times, the packets all come out, once each, in
// nondecreasing time, and those within the window in stable time order.
func FuzzReorder(f *testing.F) {
	f.Add([]byte{5, 3, 9, 1, 200, 2, 7})
	f.Add([]byte{0, 0, 0, 255, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []nat.Packet
		r := newReorder(64, func(b []nat.Packet) bool {
			got = append(got, b...)
			return true
		})
		for i := 0; i < len(data); i += 50 {
			var batch []nat.Packet
			for j := i; j < min(i+50, len(data)); j++ {
				batch = append(batch, nat.Packet{Time: int64(data[j]) * int64(1+j/64), Index: int32(j)})
			}
			r.add(batch)
		}
		r.flush()
		if len(got) != len(data) {
			t.Fatalf("%d packets out, %d in", len(got), len(data))
		}
		seen := map[int32]bool{}
		for i, p := range got {
			if seen[p.Index] {
				t.Fatalf("packet %d twice", p.Index)
			}
			seen[p.Index] = true
			if i > 0 && p.Time < got[i-1].Time {
				t.Fatalf("time goes back at %d: %+v after %+v", i, p, got[i-1])
			}
			if i > 0 && p.Time == got[i-1].Time && r.late == 0 && p.Index < got[i-1].Index {
				t.Fatalf("equal times out of file order at %d", i)
			}
		}
	})
}
