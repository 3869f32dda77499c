import Glibc
import Testing

@testable import SystemKit

@Suite struct PendingFileTests {
    func write(_ file: PendingFile, _ text: String) throws {
        try FileDescriptor.writeAll(file.descriptor, Array(text.utf8))
        #expect(fsync(file.descriptor) == 0)
    }

    func contents(_ path: String) -> String? {
        guard let bytes = try? PrivateFile.read(path, limit: 1 << 20) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func theFileHasNoNameUntilItIsPublished() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/f"
        let file = try PendingFile(for: path)
        // /tmp is ext4 or tmpfs here, both with O_TMPFILE: nothing is visible.
        #expect(file.temporaryName == nil)
        try write(file, "whole")
        #expect(entries(of: directory.path) == [])
        try file.publish()
        #expect(entries(of: directory.path) == ["f"])
        #expect(contents(path) == "whole")
        #expect(mode(of: path) == 0o600)
        #expect(file.descriptor == -1)
    }

    @Test func aDiscardedFileLeavesNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = try PendingFile(for: directory.path + "/f")
        try write(file, "partial")
        file.discard()
        #expect(entries(of: directory.path) == [])
    }

    @Test func aNameTakenMeanwhileIsNeverReplaced() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/f"
        let file = try PendingFile(for: path)
        try write(file, "ours")
        let theirs = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(theirs >= 0)
        close(theirs)
        #expect(throws: PendingFileError.taken) { try file.publish() }
        file.discard()
        #expect(entries(of: directory.path) == ["f"])
        #expect(contents(path) == nil || contents(path) == "")
    }

    @Test func aRenamedDirectoryIsDetectedAndNothingIsLeftInIt() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        #expect(mkdir(directory.path + "/d", 0o700) == 0)
        let file = try PendingFile(for: directory.path + "/d/f")
        try write(file, "ours")
        #expect(rename(directory.path + "/d", directory.path + "/e") == 0)
        #expect(throws: PendingFileError.directoryMoved) { try file.publish() }
        #expect(entries(of: directory.path + "/e") == [])
        #expect(entries(of: directory.path) == ["e"])
    }

    @Test func aRemovedDirectoryIsDetected() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        #expect(mkdir(directory.path + "/d", 0o700) == 0)
        let file = try PendingFile(for: directory.path + "/d/f")
        try write(file, "ours")
        #expect(rmdir(directory.path + "/d") == 0)
        #expect(throws: PendingFileError.directoryMoved) { try file.publish() }
        #expect(entries(of: directory.path) == [])
    }

    @Test func aMissingDirectoryIsAnOpenError() {
        #expect(throws: SystemError("open", path: "/nonexistent-pending", errno: ENOENT)) {
            _ = try PendingFile(for: "/nonexistent-pending/f")
        }
    }

    @Test func leftoversAreTheHiddenNamesOfThisFileOnly() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        for name in [".f.rastrillo-0123456789ab", ".f.rastrillo-ffffffffffff", ".f.rastrillo-short", ".g.rastrillo-0123456789ab", "f"] {
            let fd = open(directory.path + "/" + name, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            try #require(fd >= 0)
            close(fd)
        }
        #expect(
            PendingFile.leftovers(of: directory.path + "/f")
                == [directory.path + "/.f.rastrillo-0123456789ab", directory.path + "/.f.rastrillo-ffffffffffff"])
        #expect(PendingFile.leftovers(of: directory.path + "/none") == [])
        #expect(PendingFile.leftovers(of: "/nonexistent-pending/f") == [])
    }
}

/// Kept parts (`rastrillo-download --continue`): named from the start, kept unless discarded,
/// resumed after their last byte, refused when they are not this user's regular file.
@Suite struct KeptPartTests {
    @Test func aKeptPartOutlivesItsOwnerAndResumesAfterItsLastByte() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/f"
        do {
            let part = try PendingFile(keepingPartFor: path)
            #expect(part.keptSize == 0)
            try FileDescriptor.writeAll(part.descriptor, Array("first ".utf8))
        }
        #expect(entries(of: directory.path) == ["f.part"])
        #expect(mode(of: path + ".part") == 0o600)
        let again = try PendingFile(keepingPartFor: path)
        #expect(again.keptSize == 6)
        try FileDescriptor.writeAll(again.descriptor, Array("second".utf8))
        #expect(fsync(again.descriptor) == 0)
        try again.publish()
        #expect(entries(of: directory.path) == ["f"])
        let bytes = try PrivateFile.read(path, limit: 100)
        #expect(String(decoding: bytes, as: UTF8.self) == "first second")
    }

    @Test func aDiscardedPartIsRemovedAndATruncatedOneStartsAtZero() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/f"
        let part = try PendingFile(keepingPartFor: path)
        try FileDescriptor.writeAll(part.descriptor, Array("old".utf8))
        try part.truncate()
        try FileDescriptor.writeAll(part.descriptor, Array("x".utf8))
        var status = stat()
        #expect(fstat(part.descriptor, &status) == 0 && status.st_size == 1)
        part.discard()
        #expect(entries(of: directory.path) == [])
    }

    @Test func aLinkAFIFOOrAHardLinkedFileIsRefused() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/f"
        #expect(symlink("/etc/passwd", path + ".part") == 0)
        #expect(throws: KeptPartRefusal.symbolicLink) { try PendingFile(keepingPartFor: path) }
        unlink(path + ".part")
        #expect(mkfifo(path + ".part", 0o600) == 0)
        #expect(throws: KeptPartRefusal.notRegularFile) { try PendingFile(keepingPartFor: path) }
        unlink(path + ".part")
        let other = directory.path + "/other"
        close(open(other, O_CREAT | O_WRONLY, 0o600))
        #expect(link(other, path + ".part") == 0)
        #expect(throws: KeptPartRefusal.otherLinks) { try PendingFile(keepingPartFor: path) }
    }
}
