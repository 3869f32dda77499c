import Glibc

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The target's check; libFuzzer's C callback cannot capture it, so it is parked here once,
/// before the driver starts, and only read afterwards.
nonisolated(unsafe) private var currentTarget: (([UInt8]) -> Void)?
#endif

/// The whole `main` of a fuzz target. Built with `-DFUZZING` (and `-sanitize=fuzzer`) it hands
/// libFuzzer's inputs to `fuzz`; built normally it replays the seed corpus
/// `Tests/Fuzz/corpus/CORPUS` (or the paths given as arguments) through `fuzz`, so the same
/// executable is a regression check. Never returns.
public func fuzzMain(name: String, corpus: String, fuzz: @escaping ([UInt8]) -> Void) -> Never {
    #if FUZZING
    currentTarget = fuzz
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        currentTarget!(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    })
    #else
    exit(replayCorpus(name: name, defaultDirectory: corpus, arguments: CommandLine.arguments, fuzz: fuzz))
    #endif
}
