// Package capacity measures one stage of the receiver alone (cpsweep
// capacity): the consumer or a lane, fed from a large queue prefilled in
// memory, the ground truth the service-rate estimates are checked against
// (RaftLib §V-B). It shares nothing with the sweep.
package capacity
