// Package brokers is the set of broker drivers a program registers: the
// binaries that publish into or consume from a broker (dgsend, dgrecv)
// link it; cpsweep does not, and so links no broker client.
package brokers
