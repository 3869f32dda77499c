import Glibc

/// Runs `fuzz` over every regular file in the given directories or files (default: the seed
/// corpus `Tests/Fuzz/corpus/DIRECTORY` of this checkout): what a fuzz target does when built
/// without `-DFUZZING`. Returns the exit status: 0 when every input was replayed, 1 when a
/// path cannot be read. A failing input stops the process with the failing check's message.
public func replayCorpus(name: String, defaultDirectory: String, arguments: [String], fuzz: ([UInt8]) -> Void) -> Int32 {
    var paths = Array(arguments.dropFirst())
    if paths.isEmpty {
        var source = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        source.removeLast(4)
        paths = [(source + ["Tests", "Fuzz", "corpus", defaultDirectory]).joined(separator: "/")]
    }
    var count = 0
    for path in paths {
        var status = stat()
        guard stat(path, &status) == 0 else {
            printError("\(name): cannot read '\(path)': \(String(cString: strerror(errno)))")
            return 1
        }
        var files: [String] = []
        if (status.st_mode & S_IFMT) == S_IFDIR {
            guard let directory = opendir(path) else {
                printError("\(name): cannot open directory '\(path)': \(String(cString: strerror(errno)))")
                return 1
            }
            while let entry = readdir(directory) {
                let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
                }
                if entryName != ".", entryName != ".." { files.append(path + "/" + entryName) }
            }
            closedir(directory)
        } else {
            files = [path]
        }
        for file in files.sorted() {
            guard let bytes = readFile(file) else {
                printError("\(name): cannot read '\(file)': \(String(cString: strerror(errno)))")
                return 1
            }
            fuzz(bytes)
            count += 1
        }
    }
    print("\(name): replayed \(count) inputs without a failure")
    return 0
}

private func readFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count > 0 { bytes += buffer[0..<count] }
        if count < buffer.count { return ferror(file) == 0 ? bytes : nil }
    }
}

private func printError(_ message: String) {
    let bytes = Array((message + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
