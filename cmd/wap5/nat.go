package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"wap5/nat"
	"wap5/reconcile"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "nat",
			Usage:     "detect address translation in packet captures; prints the canonicalisation map",
			ArgsUsage: "PCAP...",
			Description: "PCAPs are pcap or pcapng captures taken at the same time at different points\n" +
				"(e.g. tcpdump on both sides of a router). Packets that are identical except for\n" +
				"addresses, ports, checksums and TTL are the same packet before and after\n" +
				"translation (WAP5 §7.1); the TTL (else the timestamps) says which side is which.\n" +
				"Rules: dnat (destination rewritten) and snat (source rewritten, masquerade);\n" +
				"`before` is the address as the sender wrote it, `after` as the receiver saw\n" +
				"it; a port of * keeps every port. The --json output is accepted by\n" +
				"`wap5 reconcile --nat FILE`. See docs/nat.md.",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "json", Usage: "machine-readable output (the contract's JSON)"},
				&cli.IntFlag{Name: "min-tcp", Value: 2, Usage: "matched TCP packets a rule needs"},
				&cli.IntFlag{Name: "min-udp", Value: 3, Usage: "matched UDP packets a rule needs (datagrams match by accident more easily)"},
				&cli.StringSliceFlag{Name: "offset", Usage: "`PCAP=SECONDS`: that capture's clock runs SECONDS ahead of the others (used where TTLs cannot tell the direction); repeatable"},
			},
			Action: natAction,
		}
	})
}

func natAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return usagef("nat: no PCAP given (wap5 nat [--json] PCAP...)")
	}
	if c.Int("min-tcp") < 1 || c.Int("min-udp") < 1 {
		return usagef("nat: --min-tcp and --min-udp must be at least 1")
	}
	offsets := map[int32]int64{}
	for _, o := range c.StringSlice("offset") {
		file, secs, ok := strings.Cut(o, "=")
		v, err := strconv.ParseFloat(secs, 64)
		if !ok || err != nil || math.IsNaN(v) || math.Abs(v) > 1e6 {
			return usagef("nat: --offset %q: want PCAP=SECONDS", o)
		}
		i := slices.Index(c.Args().Slice(), file)
		if i < 0 {
			return usagef("nat: --offset %q: %s is not one of the PCAP arguments", o, file)
		}
		offsets[int32(i)] = int64(math.Round(v * 1e9))
	}
	var sets [][]nat.Packet
	var warns []string
	for i, path := range c.Args().Slice() {
		capt, err := reconcile.ReadCaptureFile(path, int32(i))
		if err != nil {
			return err
		}
		sets = append(sets, capt.Packets)
		warns = append(warns, capt.Warnings...)
	}
	m := nat.DetectSets(sets, nat.Options{MinTCP: c.Int("min-tcp"), MinUDP: c.Int("min-udp"), Offsets: offsets})
	m.Warnings = append(warns, m.Warnings...)
	for _, w := range m.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	if c.Bool("json") {
		return m.WriteJSON(c.App.Writer)
	}
	return m.WriteText(c.App.Writer)
}
