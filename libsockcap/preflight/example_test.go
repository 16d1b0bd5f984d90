package preflight_test

import (
	"fmt"
	"path/filepath"

	"wap5/libsockcap/preflight"
)

// Inspect resolves a command as execvp would and says whether preloading a
// library can see it; /bin/sh is an ordinary dynamic glibc program.
func ExampleInspect() {
	t, err := preflight.Inspect("sh", "/usr/bin:/bin", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(filepath.Base(t.ELF), "static:", t.Static, "go:", t.Go, "warnings:", len(t.Warnings))
	// Output: sh static: false go: false warnings: 0
}
