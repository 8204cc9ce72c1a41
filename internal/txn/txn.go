// Package txn puts a command's staged results into place with renames and a
// journal, so that a command killed at any instant leaves the repository in
// the state before it or, once the journal is written, in a state the next
// run finishes (Resume) into the state after it; never a mix that stays.
//
// A command stages every file or folder it changes next to its destination
// (same file system, so renames are atomic), then calls Commit. Commit
// writes the journal (atomically) and does the moves; Resume repeats
// whatever a killed Commit left undone. Staged paths without a journal are
// the state before: the command removes them when it runs again.
package txn

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Move puts New where Dst is. Dst's old content, if any, is first renamed to
// Old and removed when every move is done.
type Move struct {
	New, Dst, Old string
}

type journal struct {
	Moves []Move
}

// Commit writes the journal at file, then does the moves in order.
func Commit(file string, moves []Move) error {
	for _, m := range moves {
		if m.New == "" || m.Dst == "" || m.Old == "" {
			return fmt.Errorf("txn: incomplete move %+v", m)
		}
		if _, err := os.Lstat(m.New); err != nil {
			return fmt.Errorf("txn: staged %s: %w", m.New, err)
		}
	}
	data, err := json.MarshalIndent(journal{Moves: moves}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	if err := WriteFile(file, append(data, '\n')); err != nil {
		return err
	}
	return Resume(file)
}

// Pending reports whether a journal at file waits for Resume.
func Pending(file string) bool {
	_, err := os.Stat(file)
	return err == nil
}

// Resume finishes the moves of the journal at file (none when there is no
// journal) and removes it. It is safe to run any number of times, and to
// kill at any point.
func Resume(file string) error {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("%s: %w (the journal of an interrupted command; its staged files are named in it)", file, err)
	}
	for _, m := range j.Moves {
		if _, err := os.Lstat(m.New); errors.Is(err, os.ErrNotExist) {
			continue // moved already
		}
		if _, err := os.Lstat(m.Dst); err == nil {
			if _, err := os.Lstat(m.Old); err == nil {
				// Dst is a half-moved New? No: New still exists, so Dst
				// is the old content and Old an older leftover.
				if err := os.RemoveAll(m.Old); err != nil {
					return err
				}
			}
			if err := os.Rename(m.Dst, m.Old); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(filepath.Dir(m.Dst), 0o755); err != nil {
			return err
		}
		if err := os.Rename(m.New, m.Dst); err != nil {
			return err
		}
	}
	for _, m := range j.Moves {
		if err := os.RemoveAll(m.Old); err != nil {
			return err
		}
	}
	return os.Remove(file)
}

// TempSuffix ends the name of WriteFile's temporary files, which a kill
// can leave behind: a later write of the same file replaces its own, and
// RemoveTemps removes them all.
const TempSuffix = ".kube-carry-tmp"

// WriteFile writes data to file atomically: a temporary file in the same
// folder (.<name>.kube-carry-tmp), synced, then renamed over file.
func WriteFile(file string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+TempSuffix)
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, file)
}

// CopyDir copies the regular files and folders of src into dst (which
// must not exist), for staging a changed copy of a folder.
func CopyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// RemoveTemps removes the temporary files of killed WriteFile calls in
// the folders dirs and their subfolders.
func RemoveTemps(dirs ...string) error {
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), TempSuffix) {
				return os.Remove(p)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
