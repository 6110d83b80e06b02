// agraph-bench: benchmarks, run in a release build.
//
//   swift build -c release --product agraph-bench && swift build -c release --product agraph
//   .build/release/agraph-bench offline
//
// See docs/performance.md for the figures and what they measure.
#if canImport(Glibc)
import Glibc
#endif

processEntryNanos.store(monotonicNanos(), ordering: .relaxed)
AgraphBench.main()
