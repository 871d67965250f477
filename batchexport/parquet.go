package batchexport

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hedge-analytics/hedge/warehouse"
)

// Where Parquet destinations write. Each project writes in its own directory of an
// export root, <root>/<project id>/, and nowhere else:
//
//   - the export roots are <data>/exports (ExportsDir) and the directories the
//     operator allows with --export-roots;
//   - a relative path is below the project's directory of <data>/exports: "nightly" of
//     project 2 is <data>/exports/2/nightly;
//   - an absolute path must be the project's directory of a root, or below it:
//     /mnt/exports/2/nightly for project 2 when /mnt/exports is a root;
//   - no directory of the path below the project's directory may be ".." or contain
//     "=": hedge writes the team_id=N and date=YYYY-MM-DD directories itself, and a
//     Hive-partitioned reader takes a directory named so for a column;
//   - nothing is written inside hedge's data directory other than <data>/exports, nor
//     in the warehouse's staging directory;
//   - when the files are written, the project's directory must be that directory of
//     the root itself and the path below it must not lead out of it through a symbolic
//     link.
//
// So a reader of one project's directory reads that project's rows only, and no
// project can reach another's files. An export stored before these rules whose path
// they refuse fails its runs with the rule in the error until its path is changed; a
// relative path they accept writes under <data>/exports/<project id>/ from then on.

// ExportsDir is the directory of the data directory that holds the Parquet exports of
// relative paths, one directory per project.
const ExportsDir = "exports"

// parquetTarget is where a Parquet destination of one project writes.
type parquetTarget struct {
	root    string // the export root
	project string // the project's directory: root/<project id>
	rel     string // the destination's directory below project, "." for project itself
	path    string // the path as the destination's config has it, for messages
}

// exportRoots are the export roots: <data>/exports first, then the operator's.
func (p Policy) exportRoots() []string {
	var roots []string
	if p.DataDir != "" {
		roots = append(roots, filepath.Join(p.DataDir, ExportsDir))
	}
	for _, r := range p.ParquetRoots {
		roots = append(roots, filepath.Clean(r))
	}
	return roots
}

// Validate checks the operator's export roots: absolute, outside hedge's data
// directory, and none inside a project's directory of another root
// (<root>/<digits>/...), where that project could write into it.
func (p Policy) Validate() error {
	for _, r := range p.ParquetRoots {
		if !filepath.IsAbs(r) {
			return fmt.Errorf("cannot use export root %q: it must be an absolute path", r)
		}
		if p.DataDir != "" && within(p.DataDir, filepath.Clean(r)) {
			return fmt.Errorf("cannot use export root %s: it is inside hedge's data directory %s, whose exports directory is a root already", r, p.DataDir)
		}
	}
	roots := p.exportRoots()
	for i, outer := range roots {
		for j, inner := range roots {
			if i == j || !within(outer, inner) {
				continue
			}
			rel, _ := filepath.Rel(outer, inner)
			first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			if rel == "." {
				return fmt.Errorf("cannot use export root %s twice", inner)
			}
			if isProjectID(first) {
				return fmt.Errorf("cannot use export root %s: it is inside the directory of project %s of export root %s", inner, first, outer)
			}
		}
	}
	return nil
}

func isProjectID(name string) bool {
	_, err := strconv.ParseUint(name, 10, 63)
	return err == nil
}

// within says whether path is dir or inside it; both are clean absolute paths (or
// both relative to the same directory).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// parquetTarget is where a Parquet destination of the project team writes, by the rules
// at the top of this file.
func (p Policy) parquetTarget(team int64, config map[string]any) (parquetTarget, error) {
	path, err := requiredString(config, "path", "the directory the files are written to")
	if err != nil {
		return parquetTarget{}, err
	}
	for _, name := range strings.Split(filepath.ToSlash(path), "/") {
		if name == ".." {
			return parquetTarget{}, invalidf("The Parquet path %q must not contain \"..\": name a directory of this project's own.", path)
		}
	}
	id := strconv.FormatInt(team, 10)
	t := parquetTarget{path: path}
	if !filepath.IsAbs(path) {
		t.root = filepath.Join(p.DataDir, ExportsDir)
		t.project, t.rel = filepath.Join(t.root, id), filepath.Clean(path)
	} else if t, err = p.absoluteTarget(id, path); err != nil {
		return t, err
	}
	for _, name := range strings.Split(filepath.ToSlash(t.rel), "/") {
		if strings.Contains(name, "=") {
			return t, invalidf("The Parquet path %q must not name a directory with \"=\" in it (%q): hedge writes the team_id= and date= directories itself, and readers take such a name for a column.", path, name)
		}
	}
	dir := filepath.Join(t.project, t.rel)
	if p.DataDir != "" && within(p.DataDir, dir) && !within(filepath.Join(p.DataDir, ExportsDir), dir) ||
		p.stagingDir != "" && within(p.stagingDir, dir) {
		return t, invalidf("The Parquet path %q is inside hedge's own files.", path)
	}
	return t, nil
}

// absoluteTarget is the target of an absolute path: inside the project's directory
// (id) of an export root.
func (p Policy) absoluteTarget(id, path string) (parquetTarget, error) {
	dir := filepath.Clean(path)
	var refused error
	for _, root := range p.exportRoots() {
		if !within(root, dir) {
			continue
		}
		rel, _ := filepath.Rel(root, dir)
		first, rest, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if first == id {
			return parquetTarget{root: root, project: filepath.Join(root, id), rel: filepath.Clean(cmp.Or(rest, ".")), path: path}, nil
		}
		if refused == nil {
			refused = invalidf("The Parquet path %q is outside this project's directory %s: each project writes below <export root>/<its id>.",
				path, filepath.Join(root, id))
		}
	}
	if refused != nil {
		return parquetTarget{}, refused
	}
	return parquetTarget{}, invalidf("The Parquet path %q is outside the directories hedge may write to: use a path relative to this project's exports directory, or ask the operator to allow a directory with --export-roots and write below <that directory>/<project id>.", path)
}

// parquetFailure is a failure to write the files of t, told in the terms of its path:
// the errno of err ("permission denied", "no space left on device"), never the
// server's paths.
func parquetFailure(t parquetTarget, err error) error {
	reason := "an error that hedge's log records"
	var errno syscall.Errno
	if errors.As(err, &errno) {
		reason = errno.Error()
	}
	return &failure{public: fmt.Sprintf("cannot write the Parquet files to %s: %s", t.path, reason), cause: err}
}

// errLinkOut is a destination's directory that a symbolic link takes out of its
// project's directory.
var errLinkOut = errors.New("the path leads out of this project's directory through a symbolic link")

// openProject makes the project's directory of the root if it is not there and opens
// it: the os.Root that confines what is made below it, and its real path. The
// directory must be a directory of the root itself, not a symbolic link to another.
func (t parquetTarget) openProject() (*os.Root, string, error) {
	if err := os.MkdirAll(t.root, 0o755); err != nil {
		return nil, "", err
	}
	realRoot, err := filepath.EvalSymlinks(t.root)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	id := filepath.Base(t.project)
	if err := root.Mkdir(id, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, "", err
	}
	if info, err := root.Lstat(id); err != nil {
		return nil, "", err
	} else if !info.IsDir() {
		return nil, "", fmt.Errorf("cannot use %s: %w", filepath.Join(realRoot, id), errLinkOut)
	}
	project, err := root.OpenRoot(id)
	if err != nil {
		return nil, "", err
	}
	return project, filepath.Join(realRoot, id), nil
}

// realDir makes dir (below the project's directory, whose real path is realProject)
// and returns its real path, unless a symbolic link takes it out of the project's
// directory.
func realDir(project *os.Root, realProject, dir string) (string, error) {
	// The longest part of dir that exists must resolve inside the project's
	// directory; project.MkdirAll then refuses any link out in the rest.
	for part := filepath.Join(realProject, dir); ; part = filepath.Dir(part) {
		real, err := filepath.EvalSymlinks(part)
		if err == nil {
			if !within(realProject, real) {
				return "", fmt.Errorf("cannot use %s: %w", part, errLinkOut)
			}
			break
		}
		if part == realProject {
			return "", err
		}
	}
	if err := project.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(realProject, dir))
	if err != nil {
		return "", err
	}
	if !within(realProject, real) {
		return "", fmt.Errorf("cannot use %s: %w", real, errLinkOut)
	}
	return real, nil
}

// deliverParquet puts the files in t's directory, each by way of a temporary file in
// its final directory and a rename, so that a reader never sees half a file.
func deliverParquet(t parquetTarget, team int64, runID string, files []warehouse.ExportFile) error {
	err := writeParquet(t, team, runID, files)
	if errors.Is(err, errLinkOut) {
		return &failure{public: fmt.Sprintf("cannot write the Parquet files to %s: %s", t.path, errLinkOut), cause: err}
	}
	if err != nil {
		return parquetFailure(t, err)
	}
	return nil
}

func writeParquet(t parquetTarget, team int64, runID string, files []warehouse.ExportFile) error {
	project, realProject, err := t.openProject()
	if err != nil {
		return err
	}
	defer project.Close()
	for i, f := range files {
		name := filepath.Join(t.rel, filepath.FromSlash(objectName(team, runID, files, i)))
		dir, err := realDir(project, realProject, filepath.Dir(name))
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.Base(name))
		if err := os.Rename(f.Path, target); err == nil {
			continue
		} else if !errors.Is(err, syscall.EXDEV) {
			return fmt.Errorf("cannot move %s into place: %w", target, err)
		}
		if err := copyFile(f.Path, target); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies src to dst across file systems: into a temporary file beside dst,
// synced, then renamed over dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", src, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".partial-*")
	if err != nil {
		return fmt.Errorf("cannot write beside %s: %w", dst, err)
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, in)
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", dst, err)
	}
	return nil
}
