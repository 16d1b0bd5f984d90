// Package e2e holds end-to-end checks of wap5 on a real namespaced system:
// scripts/testbed.sh starts hosts in network namespaces (a client; a forking
// and a UDP server behind a DNAT virtual IP; a threaded server behind a
// masquerading router that calls a Unix-socket helper; and, with --front, a
// forking front server whose children call the threaded server for every
// request), traces every process with `wap5 run`, and the tests run the
// built CLI on the result, as a user would:
//
//  1. wap5 reconcile turns the hosts' logs into one message trace.
//  2. wap5 link (WAP5 §5) must find the real request paths as its top
//     patterns, with their true instance counts, and its node delays
//     (Step.Wait, JSON wait_s) must agree within 10% with the intervals the
//     servers measured themselves (truth/*.jsonl timing records; the tool
//     never reads them, only the test does).
//  3. wap5 nest (Project 5 §5.1), on the trace with kind=/call= removed, so
//     that call pairs come from the connections alone, must recover the real
//     call trees: with one client from the delays alone (TestNest), with
//     three concurrent clients with the same-thread hint learnt from the
//     trace's actors (TestNestActors, TestNestRecorded on kept runs).
//
// testdata/recorded keeps testbed runs (reconciled trace, the servers'
// timing records) that wap5 link once got wrong; TestLinkRecorded applies the
// checks of step 2 to them without root. TestForkCloseRace checks a once
// open reconcile bug (testbed.sh --fork-race); the live tests still repeat a
// run that left message ends unpaired. docs/e2e.md has the measured numbers
// and what fails.
//
// The package has no non-test code. The tests need root (namespaces) and
// WAP5_BIN (the directory of the built wap5 and libsockcap.so, set by
// `make test`); without either they skip and say why. Together they take a
// few seconds; the measured agreement is written in docs/e2e.md.
package e2e
