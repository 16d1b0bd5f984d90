package trace

import (
	"fmt"
	"math"
	"strings"
)

// ActorID names the thread that sent or received a message, local to its
// node: an index into that node's actor table, 0 = unknown. Two messages
// have the same actor iff they have the same node and the same non-zero
// ActorID. Actors are hints (a thread-per-request server makes a request's
// child calls from the thread that received it; an event loop does not).
type ActorID uint16

// NoActor is the unknown actor.
const NoActor ActorID = 0

// MaxActors is how many actors one node can name; later ones are unknown.
const MaxActors = math.MaxUint16

// Actor returns the id of the named actor ("PID/TID") on node, adding it if
// new. A node that already has MaxActors actors gets NoActor for new names
// (with one warning per node); "" is NoActor.
func (t *Trace) Actor(node NodeID, name string) ActorID {
	if name == "" || node < 0 {
		return NoActor
	}
	t.ensureActorIndex(node)
	idx := t.actorIdx[node]
	if a, ok := idx[name]; ok {
		return a
	}
	tab := t.Actors[node]
	if len(tab) >= MaxActors {
		if !t.actorFull[node] {
			t.actorFull[node] = true
			t.Warnf("node %s: more than %d actors (threads); the rest are unknown", t.NodeName(node), MaxActors)
		}
		return NoActor
	}
	t.Actors[node] = append(tab, name)
	a := ActorID(len(tab) + 1)
	idx[name] = a
	return a
}

// actorBytes is Actor for a name in a byte slice; it allocates only for a
// new name.
func (t *Trace) actorBytes(node NodeID, name []byte) ActorID {
	if len(name) == 0 || node < 0 {
		return NoActor
	}
	if int(node) < len(t.actorIdx) && t.actorIdx[node] != nil {
		if a, ok := t.actorIdx[node][string(name)]; ok {
			return a
		}
	}
	return t.Actor(node, string(name))
}

// ensureActorIndex makes t.Actors, t.actorIdx and t.actorFull cover node,
// building the node's name index on first use.
func (t *Trace) ensureActorIndex(node NodeID) {
	n := int(node) + 1
	if len(t.Actors) < n {
		t.Actors = append(t.Actors, make([][]string, n-len(t.Actors))...)
	}
	if len(t.actorIdx) < n {
		t.actorIdx = append(t.actorIdx, make([]map[string]ActorID, n-len(t.actorIdx))...)
	}
	if len(t.actorFull) < n {
		t.actorFull = append(t.actorFull, make([]bool, n-len(t.actorFull))...)
	}
	if t.actorIdx[node] == nil {
		idx := make(map[string]ActorID, len(t.Actors[node]))
		for i, s := range t.Actors[node] {
			idx[s] = ActorID(i + 1)
		}
		t.actorIdx[node] = idx
	}
}

// ActorName returns the name of actor a on node ("" for NoActor or an id the
// node does not have).
func (t *Trace) ActorName(node NodeID, a ActorID) string {
	if a == NoActor || node < 0 || int(node) >= len(t.Actors) || int(a) > len(t.Actors[node]) {
		return ""
	}
	return t.Actors[node][a-1]
}

// HasActors reports whether any node has an actor table.
func (t *Trace) HasActors() bool {
	for _, tab := range t.Actors {
		if len(tab) > 0 {
			return true
		}
	}
	return false
}

// checkActors validates the actor tables (CheckValid).
func (t *Trace) checkActors() error {
	if len(t.Actors) > len(t.Nodes) {
		for n := len(t.Nodes); n < len(t.Actors); n++ {
			if len(t.Actors[n]) > 0 {
				return fmt.Errorf("actor table for node %d out of range [0,%d)", n, len(t.Nodes))
			}
		}
	}
	for n, tab := range t.Actors {
		if len(tab) > MaxActors {
			return fmt.Errorf("node %d has %d actors, at most %d", n, len(tab), MaxActors)
		}
		seen := make(map[string]struct{}, len(tab))
		for i, s := range tab {
			if s == "" || strings.ContainsAny(s, " \t\r\n") {
				return fmt.Errorf("node %d actor %d: bad name %q", n, i+1, s)
			}
			if _, dup := seen[s]; dup {
				return fmt.Errorf("node %d: actor %q named twice", n, s)
			}
			seen[s] = struct{}{}
		}
	}
	return nil
}

// actorCount is the size of node's actor table.
func (t *Trace) actorCount(node NodeID) int {
	if int(node) < len(t.Actors) {
		return len(t.Actors[node])
	}
	return 0
}
