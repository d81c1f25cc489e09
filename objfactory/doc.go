// Package objfactory is the hot receive path (the paper's object factory,
// §4.4 and Fig. 8): per receive socket a deserialization loop decodes whole
// buckets into pre-allocated, recycled tuple objects and hands them to a
// consumer through a lock-free single-producer single-consumer ring, so
// decoding stays off the consumer's critical path and the steady state does
// not allocate.
package objfactory
