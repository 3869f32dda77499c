import ByteText

// Replacement with the standard library alone (`replacing(_:with:)` comes from
// _StringProcessing, whose regex engine it would link into every tool); the search is
// ByteText's `firstRange(ofText:)`.

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
