import ByteText
import CommandLineKit
import Glibc
import SystemKit

/// Where `rastrillo-download URL DEST` writes: DEST itself, or, when DEST is an existing
/// directory, a file in it named after the URL's last path segment (as `curl -O --output-dir`
/// and `wget -P` do).
public enum DownloadDestination {
    /// The file path for `destination` and the request `target` (path and query).
    ///
    /// The name is the last segment of the target's path, percent-decoded; the query is not
    /// part of it. A name that is empty, `.` or `..`, or that holds `/` or NUL once decoded, or
    /// that is not UTF-8, is refused, as is a DEST of `-` (standard output is
    /// rastrillo-fetch's job).
    /// - Throws: `UsageError` for those refusals.
    public static func path(for destination: String, target: String) throws -> String {
        if destination == "-" {
            throw UsageError(
                "DEST '-': rastrillo-download writes files only; use rastrillo-fetch to write a body to standard output",
                argument: destination)
        }
        var status = stat()
        guard stat(destination, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return destination }
        let name = try fileName(fromTarget: target)
        return destination.hasSuffix("/") ? destination + name : destination + "/" + name
    }

    /// Says on standard error, one line each, which hidden files beside `path` a killed
    /// download left (``PendingFile/leftovers(of:)``: only on a file system without
    /// `O_TMPFILE`): `rastrillo-download: note: P is left by an interrupted download of DEST;
    /// remove it with rm -- P`, or with `json` the line `{"notice":"leftover","path":P}`. They
    /// are named, never removed: one may belong to a download still running.
    public static func announceLeftovers(of path: String, json: Bool) {
        for leftover in PendingFile.leftovers(of: path) {
            if json {
                struct Notice: Encodable {
                    let notice = "leftover"
                    let path: String
                }
                if let line = try? JSONOutput.line(Notice(path: leftover)) {
                    try? OutputChannel.standardError.write(line)
                }
            } else {
                Diagnostics.note(
                    "\(leftover) is left by an interrupted download of \(path); remove it with rm -- \(leftover)")
            }
        }
    }

    /// The percent-decoded last path segment of `target`.
    /// - Throws: `UsageError` when it cannot name a file.
    public static func fileName(fromTarget target: String) throws -> String {
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let segment = path.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        var bytes: [UInt8] = []
        var utf8 = Array(segment.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = Hex.decode(bytes: utf8.prefix(2))?.first
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        let refuse = { (why: String) -> UsageError in
            UsageError(
                "DEST is a directory and the URL's last path segment '\(segment)' \(why); give the file's path as DEST",
                argument: String(segment))
        }
        if bytes.isEmpty { throw refuse("is empty") }
        if bytes == [0x2E] || bytes == [0x2E, 0x2E] { throw refuse("is not a file name") }
        if bytes.contains(0x2F) || bytes.contains(0) { throw refuse("holds '/' or NUL once decoded") }
        guard let name = String(validating: bytes, as: UTF8.self) else { throw refuse("is not UTF-8 once decoded") }
        return name
    }
}
