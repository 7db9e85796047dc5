// SPDX-License-Identifier: MIT

// kcr-image builds kcr-operator's container image without a container
// engine: it reads the final stage of a Dockerfile, which must start
// `FROM scratch`, and carries out its instructions itself (COPY, USER,
// ENTRYPOINT, CMD, ENV, WORKDIR, LABEL, ARG with defaults). The files an
// earlier stage would have made are given as a directory that stands for
// that stage's root filesystem (--stage NAME=DIR). The result is one layer
// on an empty base, written as an OCI image layout directory and, if asked,
// as a `docker load` tarball. Nothing is pushed anywhere.
//
// Usage:
//
//	kcr-image -dockerfile Dockerfile -stage build=ROOT -tag kcr-operator:latest \
//	    -oci OUT_DIR [-tar OUT.tar] [-platform linux/amd64]
//
// The layer is reproducible: every entry is owned by 0:0 and dated
// SOURCE_DATE_EPOCH (0 when unset), directories are 0755, files keep their
// mode bits.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type stageFlag map[string]string

func (s stageFlag) String() string { return fmt.Sprint(map[string]string(s)) }
func (s stageFlag) Set(v string) error {
	k, d, ok := strings.Cut(v, "=")
	if !ok || k == "" || d == "" {
		return fmt.Errorf("want NAME=DIR, got %q", v)
	}
	s[k] = d
	return nil
}

// instruction is one Dockerfile line after continuation lines are joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

func parseDockerfile(r io.Reader) ([]instruction, error) {
	var out []instruction
	sc := bufio.NewScanner(r)
	var cur strings.Builder
	start, n := 0, 0
	for sc.Scan() {
		n++
		l := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		} else if strings.HasPrefix(l, "#") {
			continue // a comment inside a continued instruction
		}
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(l)
		full := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		out = append(out, instruction{start, strings.ToUpper(cmd), strings.TrimSpace(args)})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur.Len() != 0 {
		return nil, errors.New("the last instruction ends with a line continuation")
	}
	return out, nil
}

// words splits an exec-form JSON array or a shell-form string.
func words(s string) ([]string, bool, error) {
	if strings.HasPrefix(s, "[") {
		var v []string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, true, err
		}
		return v, true, nil
	}
	return strings.Fields(s), false, nil
}

func expand(s string, args map[string]string) string {
	return os.Expand(s, func(k string) string { return args[k] })
}

type file struct {
	src  string // on the host
	mode os.FileMode
}

type builder struct {
	stages map[string]string
	files  map[string]file // image path (no leading /) -> source
	cfg    v1.Config
}

func (b *builder) copy(in instruction, args map[string]string) error {
	ws, _, err := words(in.args)
	if err != nil {
		return err
	}
	from := ""
	var rest []string
	for _, w := range ws {
		switch {
		case strings.HasPrefix(w, "--from="):
			from = strings.TrimPrefix(w, "--from=")
		case strings.HasPrefix(w, "--"):
			return fmt.Errorf("COPY option %s is not supported", w)
		default:
			rest = append(rest, expand(w, args))
		}
	}
	if from == "" {
		return errors.New("COPY without --from: only files of an earlier stage can be copied")
	}
	root, ok := b.stages[from]
	if !ok {
		return fmt.Errorf("COPY --from=%s: no -stage %s=DIR given", from, from)
	}
	if len(rest) != 2 {
		return errors.New("COPY: exactly one source and one destination are supported")
	}
	src := filepath.Join(root, filepath.FromSlash(rest[0]))
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("COPY: %s is not a regular file", rest[0])
	}
	dst := rest[1]
	if strings.HasSuffix(dst, "/") {
		dst += path.Base(rest[0])
	}
	if !path.IsAbs(dst) {
		dst = path.Join(b.cfg.WorkingDir, dst)
		if !path.IsAbs(dst) {
			dst = "/" + dst
		}
	}
	b.files[strings.TrimPrefix(path.Clean(dst), "/")] = file{src, st.Mode().Perm()}
	return nil
}

func (b *builder) apply(in instruction, args map[string]string) error {
	switch in.cmd {
	case "COPY":
		return b.copy(in, args)
	case "USER":
		b.cfg.User = expand(in.args, args)
	case "ENTRYPOINT", "CMD":
		ws, exec, err := words(in.args)
		if err != nil {
			return err
		}
		if !exec {
			return fmt.Errorf("%s in shell form needs a shell, which a scratch image has not", in.cmd)
		}
		if in.cmd == "ENTRYPOINT" {
			b.cfg.Entrypoint = ws
		} else {
			b.cfg.Cmd = ws
		}
	case "WORKDIR":
		b.cfg.WorkingDir = expand(in.args, args)
	case "ENV", "LABEL":
		k, v, ok := strings.Cut(in.args, "=")
		if !ok || strings.ContainsAny(k, " \t") {
			return fmt.Errorf("%s: only one KEY=VALUE per instruction is supported", in.cmd)
		}
		v = strings.Trim(expand(v, args), `"`)
		if in.cmd == "ENV" {
			b.cfg.Env = append(b.cfg.Env, k+"="+v)
		} else {
			if b.cfg.Labels == nil {
				b.cfg.Labels = map[string]string{}
			}
			b.cfg.Labels[k] = v
		}
	case "ARG":
		k, v, _ := strings.Cut(in.args, "=")
		if _, set := args[k]; !set {
			args[k] = v
		}
	default:
		return fmt.Errorf("%s is not supported in the final stage (it would need a container)", in.cmd)
	}
	return nil
}

// layer writes the collected files as one tar with their parent directories.
func (b *builder) layer(epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(b.files))
	for n := range b.files {
		names = append(names, n)
	}
	sort.Strings(names)
	dirs := map[string]bool{}
	for _, n := range names {
		var parents []string
		for d := path.Dir(n); d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
			dirs[d] = true
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/",
				Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		f := b.files[n]
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Size: int64(len(data)),
			Mode: int64(f.mode), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func run() error {
	stages := stageFlag{}
	dockerfile := flag.String("dockerfile", "Dockerfile", "the Dockerfile whose last stage is built")
	flag.Var(stages, "stage", "NAME=DIR: DIR stands for the root filesystem of stage NAME (repeatable)")
	tag := flag.String("tag", "kcr-operator:latest", "the image's name, written into the layout and tarball")
	ociDir := flag.String("oci", "", "write an OCI image layout into this directory (replaced)")
	tarOut := flag.String("tar", "", "also write a `docker load` tarball here")
	platform := flag.String("platform", "linux/amd64", "OS/ARCH of the image")
	flag.Parse()
	if *ociDir == "" && *tarOut == "" {
		return errors.New("give -oci DIR and/or -tar FILE")
	}
	osName, arch, ok := strings.Cut(*platform, "/")
	if !ok {
		return fmt.Errorf("-platform %q: want OS/ARCH", *platform)
	}
	ref, err := name.NewTag(*tag)
	if err != nil {
		return err
	}
	fh, err := os.Open(*dockerfile)
	if err != nil {
		return err
	}
	ins, err := parseDockerfile(fh)
	fh.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", *dockerfile, err)
	}
	last := -1
	for i, in := range ins {
		if in.cmd == "FROM" {
			last = i
		}
	}
	if last < 0 {
		return fmt.Errorf("%s: no FROM", *dockerfile)
	}
	args := map[string]string{}
	for _, in := range ins[:last] {
		if in.cmd == "ARG" && last > 0 {
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = v // global ARGs before the first FROM, and stage ARGs (harmless)
		}
	}
	if base, _, _ := strings.Cut(ins[last].args, " "); base != "scratch" {
		return fmt.Errorf("%s:%d: the final stage is FROM %s; only FROM scratch can be built without a container",
			*dockerfile, ins[last].line, base)
	}
	b := &builder{stages: stages, files: map[string]file{}}
	for _, in := range ins[last+1:] {
		if err := b.apply(in, args); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", *dockerfile, in.line, in.cmd, err)
		}
	}
	if len(b.files) == 0 {
		return errors.New("the final stage copies no file")
	}
	epoch := time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
		}
		epoch = time.Unix(sec, 0).UTC()
	}
	data, err := b.layer(epoch)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "kcr-image: " + *dockerfile}})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = osName, arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config = b.cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	if *ociDir != "" {
		if err := os.RemoveAll(*ociDir); err != nil {
			return err
		}
		p, err := layout.Write(*ociDir, empty.Index)
		if err != nil {
			return err
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": *tag,
		})); err != nil {
			return err
		}
	}
	if *tarOut != "" {
		if err := tarball.WriteToFile(*tarOut, ref, img); err != nil {
			return err
		}
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("kcr-image: %s %s (%d files, layer %d bytes)\n", *tag, d, len(b.files), len(data))
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kcr-image:", err)
		os.Exit(1)
	}
}
