package linking

import "testing"

// TestPosFrom checks posIn and posFrom (galloping from a position) against
// a scan, on receive times with ties (ordered by index within a tie).
func TestPosFrom(t *testing.T) {
	ins := []int32{4, 9, 2, 3, 7, 1, 5, 6, 8, 0, 11}
	recv := []int64{10, 10, 20, 30, 30, 40, 50, 50, 50, 60, 70}
	for p := range ins { // the order the index makes: (recv, index)
		if p > 0 && recv[p] == recv[p-1] && ins[p] < ins[p-1] {
			t.Fatalf("test data out of order at %d", p)
		}
	}
	tests := []struct {
		name string
		i    int32
		t    int64
		want int32
	}{
		{"first", 4, 10, 0},
		{"tie, second", 9, 10, 1},
		{"alone", 2, 20, 2},
		{"tie of three, middle", 6, 50, 7},
		{"tie of three, last", 8, 50, 8},
		{"last", 11, 70, 10},
		{"not received then", 3, 20, -1},
		{"not there", 10, 50, -1},
		{"after the end", 12, 80, -1},
	}
	for _, tc := range tests {
		if got := posIn(ins, recv, tc.i, tc.t); got != tc.want {
			t.Errorf("%s: posIn = %d, want %d", tc.name, got, tc.want)
		}
		// From every position at or before it (every one, when absent).
		last := tc.want
		if last < 0 {
			last = int32(len(ins)) - 1
		}
		for from := 0; from <= int(last); from++ {
			if got := posFrom(ins, recv, tc.i, tc.t, from); got != tc.want {
				t.Errorf("%s: posFrom(…, %d) = %d, want %d", tc.name, from, got, tc.want)
			}
		}
	}
}
