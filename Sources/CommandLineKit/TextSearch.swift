// Substring search with the standard library alone. `firstRange(of:)`, `contains(_:)` with a
// string and `split(separator:)` with a string come from _StringProcessing, whose regex engine
// they link into every tool (about 2 MB and 3,000 relocations, 0.2 ms of each start); these
// few helpers are all the kit needs.

extension StringProtocol {
    /// The range of the first occurrence of `target` (compared character by character), or nil;
    /// nil for an empty `target`.
    func firstRange(ofText target: some StringProtocol) -> Range<Index>? {
        guard let first = target.first else { return nil }
        var start = startIndex
        while let candidate = self[start...].firstIndex(of: first) {
            if self[candidate...].hasPrefix(target) {
                return candidate..<index(candidate, offsetBy: target.count)
            }
            start = index(after: candidate)
        }
        return nil
    }
}

extension String {
    /// Every occurrence of `target` (non-empty) replaced by `replacement`, left to right.
    func replacingAll(_ target: String, with replacement: String) -> String {
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(ofText: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
