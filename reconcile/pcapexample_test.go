package reconcile_test

import (
	"fmt"
	"net/netip"
	"os"

	"wap5/reconcile"
	"wap5/trace"
)

// Two sniffers, one on each side of a router doing DNAT (10.201.1.100:80 →
// 10.201.2.2:8080) and masquerade (as 10.201.2.1), saw one request and its
// reply. Opened together, they give the translation and one call and its
// return between the real endpoints, with each host's times taken from the
// sniffer next to it.
func ExampleOpenPcaps() {
	hosts := reconcile.HostNames{
		netip.MustParseAddr("10.201.1.2"): "client",
		netip.MustParseAddr("10.201.2.2"): "server",
	}
	set, err := reconcile.OpenPcaps([]string{
		"../testdata/pcap/nat-client-side.pcap",
		"../testdata/pcap/nat-server-side.pcapng",
	}, reconcile.Options{}, hosts)
	if err != nil {
		fmt.Println(err)
		return
	}
	set.NAT.WriteText(os.Stdout)
	for _, c := range set.Clocks {
		fmt.Println("clock of", c)
	}
	t, err := reconcile.ReconcileSources(set.Sources, reconcile.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	t.Warnings = nil
	trace.WriteText(os.Stdout, t)
	// Output:
	// dnat tcp 10.201.1.100:80 -> 10.201.2.2:8080  (1 flows, 13 packets)
	// snat tcp 10.201.1.2:* -> 10.201.2.1:*  (1 flows, 13 packets)
	// clock of client: ../testdata/pcap/nat-client-side.pcap
	// clock of server: ../testdata/pcap/nat-server-side.pcapng
	// # wap5 message trace v1
	// 1700000000.000300000 client 10.201.1.2:40000 1700000002.000350000 server 10.201.2.2:8080 100 id=0 kind=call call=0
	// 1700000002.001000000 server 10.201.2.2:8080 1700000000.001050000 client 10.201.1.2:40000 300 id=1 kind=return call=0
}
