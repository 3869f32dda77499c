// The Rastrillo library: everything of RastrilloHTTP and RastrilloCore, plus what needs Foundation.
//
// RastrilloHTTP uses nothing of Foundation but `Date` (whose few inlined pieces link none of
// the rest), so the HTTP tools, which link it alone, start without loading Foundation
// (bench/fetch measures that start). Programs that import Rastrillo
// also get `localizedDescription` with the errors' own sentences.
@_exported import RastrilloCore
@_exported import RastrilloHTTP
import FoundationEssentials

/// `localizedDescription` is the error's message.
extension NativeClientError: LocalizedError {
    /// The message, for `localizedDescription`.
    public var errorDescription: String? { message }
}

/// `localizedDescription` is the error's message.
extension NativeDownloadError: LocalizedError {
    /// The message, for `localizedDescription`.
    public var errorDescription: String? { message }
}
