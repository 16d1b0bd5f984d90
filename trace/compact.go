package trace

// CompactEndpoints shrinks the endpoint table to the endpoints that msgs
// (and NoEndpoint) use, rewriting msgs' endpoint ids in place; later
// interning continues from the smaller table. A stream that keeps only a
// window of messages calls it so that its memory stays bounded.
func (t *Trace) CompactEndpoints(msgs []Message) {
	t.ensureEndpointIndex()
	remap := make(map[EndpointID]EndpointID, 2*len(msgs)+1)
	eps := []string{t.Endpoints[NoEndpoint]}
	remap[NoEndpoint] = NoEndpoint
	get := func(e EndpointID) EndpointID {
		if n, ok := remap[e]; ok {
			return n
		}
		n := EndpointID(len(eps))
		eps = append(eps, t.EndpointName(e))
		remap[e] = n
		return n
	}
	for i := range msgs {
		msgs[i].SrcEP = get(msgs[i].SrcEP)
		msgs[i].DstEP = get(msgs[i].DstEP)
	}
	t.Endpoints = eps
	t.epIdx = make(map[string]EndpointID, len(eps))
	for i, e := range eps {
		t.epIdx[e] = EndpointID(i)
	}
	t.epIndexed = len(eps)
}
