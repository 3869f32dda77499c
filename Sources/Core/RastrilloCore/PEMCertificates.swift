/// What OpenSSL (through libcurl's `--cacert`) reads as a certificate in a PEM file.
public enum PEMCertificates {
    /// The labels OpenSSL's `PEM_X509_INFO_read_bio` takes as a certificate.
    private static let labels = ["CERTIFICATE", "TRUSTED CERTIFICATE", "X509 CERTIFICATE"]

    /// Whether `bytes` hold at least one PEM certificate block: a `-----BEGIN LABEL-----` line,
    /// then base64 text (at least one character of it), then `-----END LABEL-----`.
    public static func containsCertificate(_ bytes: ArraySlice<UInt8>) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(omittingEmptySubsequences: true) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        var index = lines.startIndex
        while index < lines.endIndex {
            let line = lines[index]
            index += 1
            guard let label = labels.first(where: { line.trimmingTrailingBlanks == "-----BEGIN \($0)-----" }) else { continue }
            var body = 0
            while index < lines.endIndex {
                let trimmed = lines[index].trimmingTrailingBlanks
                if trimmed == "-----END \(label)-----" {
                    index += 1
                    if body > 0 { return true }
                    break
                }
                // A line that is not base64 ends this block unfinished; it may begin the next.
                guard trimmed.unicodeScalars.allSatisfy(isBase64) else { break }
                body += trimmed.count
                index += 1
            }
        }
        return false
    }

    private static func isBase64(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "+", "/", "=": true
        default: false
        }
    }
}

extension Substring {
    /// Without trailing spaces and tabs.
    fileprivate var trimmingTrailingBlanks: Substring {
        var text = self
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
