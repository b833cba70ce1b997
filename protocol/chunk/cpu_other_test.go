//go:build !unix

package chunk

func processCPU() int64 { return 0 }
