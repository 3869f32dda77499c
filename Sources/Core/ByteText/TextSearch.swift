// Substring search with the standard library alone. `firstRange(of:)` and `contains(_:)` with a
// string come from _StringProcessing, whose regex engine they link into every tool (about 2 MB
// and 3,000 relocations, 0.2 ms of each start).

extension StringProtocol {
    /// The range of the first occurrence of `target`'s UTF-8 bytes, compared byte by byte; nil
    /// when there is none or `target` is empty.
    public func firstRange(ofText target: some StringProtocol) -> Range<Index>? {
        let needle = target.utf8
        guard let first = needle.first else { return nil }
        var start = utf8.startIndex
        while let candidate = utf8[start...].firstIndex(of: first) {
            if utf8[candidate...].starts(with: needle) {
                return candidate..<utf8.index(candidate, offsetBy: needle.count)
            }
            start = utf8.index(after: candidate)
        }
        return nil
    }

    /// Whether `target` occurs in the text, compared byte by byte (see `firstRange(ofText:)`).
    public func containsText(_ target: some StringProtocol) -> Bool {
        firstRange(ofText: target) != nil
    }
}
