// Package svgchart draws the line charts the benchmarks and the
// simulation write beside their results: a few polylines on linear axes
// from zero, as a small standalone SVG. It is written by hand (about a
// hundred lines) rather than with a plotting library: the charts need
// nothing more, and it keeps the agent binary free of a plotting
// dependency.
package svgchart
