package tracegen

import (
	"io"
	"testing"
)

// BenchmarkWrite streams a CoDeeN-shaped trace (codeen.gen, first 500,000
// messages) as text; BenchmarkGenerate builds it in memory.
func BenchmarkWrite(b *testing.B) {
	bench(b, func(c *Config) (int64, error) {
		s, err := Write(io.Discard, c)
		if err != nil {
			return 0, err
		}
		return s.Messages, nil
	})
}

func BenchmarkGenerate(b *testing.B) {
	bench(b, func(c *Config) (int64, error) {
		t, err := Generate(c)
		if err != nil {
			return 0, err
		}
		return int64(len(t.Messages)), nil
	})
}

func bench(b *testing.B, run func(*Config) (int64, error)) {
	cfg, err := ParseConfigFile("../testdata/gen/codeen.gen")
	if err != nil {
		b.Fatal(err)
	}
	cfg.Duration, cfg.Messages = 0, 500_000
	var n int64
	for b.Loop() {
		m, err := run(cfg)
		if err != nil {
			b.Fatal(err)
		}
		n += m
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}
