package libsockcap

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// TestPrefetchPeek reads real logs (the repository's, and those under the
// directories in $WAP5_DECODE_LOGS) twice, once calling Prefetch after
// every event: the same events, and the descriptor entry the fast decoder
// noted for the next record (peekNext) is that of the next event's
// descriptor whenever that event is the next record of the same thread.
func TestPrefetchPeek(t *testing.T) {
	var files []string
	for _, d := range append([]string{"../reconcile/testdata/logs", "../cmd/wap5/testdata/dump"}, strings.Fields(os.Getenv("WAP5_DECODE_LOGS"))...) {
		f, err := FindLogs(d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f...)
	}
	checked, events := 0, 0
	for _, f := range files {
		a, err := Open(f)
		if err != nil {
			continue
		}
		b, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		b.EnablePrefetch()
		for {
			// what b's decoder noted for its next record, before Scan
			st, pos, slot, rec := b.cur, 0, b.pfSlot, b.pfRec
			if st != nil {
				pos = st.pos
			}
			b.Prefetch()
			oa, ob := a.Scan(), b.Scan()
			if oa != ob {
				t.Fatalf("%s: event %d: one reader ended", f, events)
			}
			if !oa {
				break
			}
			if !reflect.DeepEqual(*a.Event(), *b.Event()) {
				t.Fatalf("%s: event %d differs with Prefetch:\n%+v\n%+v", f, events, *a.Event(), *b.Event())
			}
			// The same thread, its next record (no FD record between:
			// peekNext notes no descriptor for one) read as this event.
			if st != nil && b.cur == st && rec != 0 && slot != 0 && st.pos > pos && rec == b.recAddr(st, pos) {
				if fd := b.Event().Fd; fd < 0 || int(fd) >= len(st.fds.small) || slot != uintptr(unsafe.Pointer(&st.fds.small[fd])) {
					t.Fatalf("%s: event %d: the entry noted is not that of descriptor %d", f, events, fd)
				}
				checked++
			}
			events++
		}
		a.Close()
		b.Close()
	}
	if checked < 50 {
		t.Fatalf("only %d of %d events checked", checked, events)
	}
	t.Logf("%d logs, %d events, %d noted descriptors checked", len(files), events, checked)
}
