// SPDX-License-Identifier: MIT

// pbschema-gen writes src/util/pb_schema.c, the tables of src/util/pb_schema.h
// that the protobuf transcoder (src/util/pbscan.h) reads: for every kind that
// client-go's scheme registers from k8s.io/api (plus metav1.Status), the Go
// structs reachable from it, each with its fields in the order encoding/json
// writes them, their protobuf field numbers, JSON names and how their values
// are written.
//
// Everything is read by reflection from the struct tags of k8s.io/api at the
// version this module requires: the tags are the API's protobuf definitions
// (generated.proto is made from them). A type the tables cannot describe is
// an error naming the path to it, never a guess.
//
// Usage: pbschema-gen [-o FILE]   (default: standard output)
//
// scripts/gen-pb-schema.sh builds and runs it.
package main

import (
	"bufio"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
)

// The kinds and flags of pb_schema.h.
const (
	kString = iota + 1
	kBytes
	kBool
	kInt32
	kInt64
	kMessage
	kTime
	kMicroTime
	kQuantity
	kIntOrString
	kRaw
	kFieldsV1
	kStringList
)

// Unsigned, float and metav1.Duration fields are refused: no kind of the
// pinned k8s.io/api has one, and the transcoder writes only what is tested.
var kindNames = [...]string{"", "STRING", "BYTES", "BOOL", "INT32", "INT64", "MESSAGE", "TIME",
	"MICROTIME", "QUANTITY", "INTORSTRING", "RAW", "FIELDSV1", "STRING_LIST"}

const (
	fRepeated  = 0x01
	fMap       = 0x02
	fOmitEmpty = 0x04
	fPointer   = 0x08
	fInline    = 0x10
	fNullable  = 0x20
	// fOmitZero: json:",omitzero", which Go's encoding/json honours since
	// Go 1.24 (KCR__PBF_OMITZERO).
	fOmitZero = 0x40
)

var flagNames = []struct {
	bit  int
	name string
}{{fRepeated, "REP"}, {fMap, "MAP"}, {fOmitEmpty, "OMIT"}, {fPointer, "PTR"},
	{fInline, "INL"}, {fNullable, "NUL"}, {fOmitZero, "OMZ"}}

// The Go types with a JSON form of their own that the transcoder knows.
var special = map[reflect.Type]int{
	reflect.TypeOf(metav1.Time{}):          kTime,
	reflect.TypeOf(metav1.MicroTime{}):     kMicroTime,
	reflect.TypeOf(resource.Quantity{}):    kQuantity,
	reflect.TypeOf(intstr.IntOrString{}):   kIntOrString,
	reflect.TypeOf(runtime.RawExtension{}): kRaw,
	reflect.TypeOf(metav1.FieldsV1{}):      kFieldsV1,
}

var (
	typeMetaType  = reflect.TypeOf(metav1.TypeMeta{})
	jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

type field struct {
	number int
	kind   int
	flags  int
	sub    int
	name   string
}

type message struct {
	name   string
	fields []field
}

type root struct {
	apiVersion, kind string
	message          int
}

type gen struct {
	messages []*message
	index    map[reflect.Type]int
	errs     []string
	notes    []string
	mismatch int // tags whose wire type or label does not fit the Go type
}

func (g *gen) fail(path, format string, args ...any) {
	g.errs = append(g.errs, path+": "+fmt.Sprintf(format, args...))
}

func (g *gen) note(path, format string, args ...any) {
	g.notes = append(g.notes, path+": "+fmt.Sprintf(format, args...))
}

func typeName(t reflect.Type) string {
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// shortName is a message's name in the tables: its Go type's name without
// "k8s.io/api/" or "k8s.io/apimachinery/pkg/apis/" ("core/v1.ConfigMap",
// "meta/v1.ObjectMeta"). The full names would not fit: the names are
// reached by uint16 offsets, and 1182 full type names take 53 kB alone.
func shortName(t reflect.Type) string {
	n := typeName(t)
	for _, p := range []string{"k8s.io/api/", "k8s.io/apimachinery/pkg/apis/"} {
		if s, ok := strings.CutPrefix(n, p); ok {
			return s
		}
	}
	return n
}

// marshals says whether t has a JSON or text form of its own.
func marshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || p.Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || p.Implements(textMarshaler)
}

// isStringList says whether t is a named []string that protobuf encodes as a
// message {repeated string items = 1} (ExtraValue and its kind): generated.pb.go
// gives such a type the methods of a message.
func isStringList(t reflect.Type) bool {
	if t.Kind() != reflect.Slice || t.Elem().Kind() != reflect.String || t.Name() == "" {
		return false
	}
	_, ok := reflect.PointerTo(t).MethodByName("Unmarshal")
	return ok
}

// visit returns the index of struct t's message, describing it first if new.
func (g *gen) visit(t reflect.Type, path string) int {
	if i, ok := g.index[t]; ok {
		return i
	}
	i := len(g.messages)
	if i > 0xffff {
		g.fail(path, "more than 65536 messages")
		return 0
	}
	m := &message{name: shortName(t)}
	g.messages = append(g.messages, m)
	g.index[t] = i
	m.fields = g.fields(t, typeName(t))
	return i
}

// valueKind is the kind of one value of type t (no pointer, slice or map).
func (g *gen) valueKind(t reflect.Type, path string) (kind, sub int) {
	if k, ok := special[t]; ok {
		return k, 0
	}
	if marshals(t) {
		g.fail(path, "%s has a JSON or text form of its own that the tables do not know", typeName(t))
		return 0, 0
	}
	if isStringList(t) {
		return kStringList, 0
	}
	switch t.Kind() {
	case reflect.String:
		return kString, 0
	case reflect.Bool:
		return kBool, 0
	case reflect.Int32:
		return kInt32, 0
	case reflect.Int, reflect.Int64:
		return kInt64, 0
	case reflect.Struct:
		return kMessage, g.visit(t, path)
	}
	g.fail(path, "unsupported type %s (%s)", typeName(t), t.Kind())
	return 0, 0
}

func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}

// fieldKind is the kind and flags (but omitempty) of a field of type t.
func (g *gen) fieldKind(t reflect.Type, path string) (kind, flags, sub int) {
	switch t.Kind() {
	case reflect.Pointer:
		e := t.Elem()
		switch e.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			g.fail(path, "pointer to %s (%s)", e.Kind(), t)
			return 0, 0, 0
		}
		if marshals(t) && special[e] == 0 {
			g.fail(path, "%s has a JSON or text form of its own that the tables do not know", t)
			return 0, 0, 0
		}
		kind, sub = g.valueKind(e, path)
		return kind, fPointer, sub
	case reflect.Slice:
		if isBytes(t) || isStringList(t) {
			if marshals(t) {
				g.fail(path, "%s has a JSON or text form of its own", typeName(t))
			}
			kind, sub = kBytes, 0
			if !isBytes(t) {
				kind, sub = g.valueKind(t, path)
			}
			return kind, fNullable, sub
		}
		if marshals(t) {
			g.fail(path, "%s has a JSON or text form of its own", typeName(t))
		}
		e := t.Elem()
		switch {
		case isBytes(e):
			return kBytes, fRepeated | fNullable, 0
		case isStringList(e):
		case e.Kind() == reflect.Slice:
			g.fail(path, "nested slice %s", t)
			return 0, 0, 0
		case e.Kind() == reflect.Pointer || e.Kind() == reflect.Map || e.Kind() == reflect.Interface:
			g.fail(path, "slice of %s (%s)", e.Kind(), t)
			return 0, 0, 0
		}
		kind, sub = g.valueKind(e, path+"[]")
		return kind, fRepeated | fNullable, sub
	case reflect.Map:
		if marshals(t) {
			g.fail(path, "%s has a JSON or text form of its own", typeName(t))
		}
		k, e := t.Key(), t.Elem()
		if k.Kind() != reflect.String || marshals(k) {
			g.fail(path, "map key %s is not a string", k)
			return 0, 0, 0
		}
		switch {
		case isBytes(e):
			return kBytes, fMap | fNullable, 0
		case isStringList(e):
		case e.Kind() == reflect.Slice:
			g.fail(path, "map of slices %s (only a string list wrapper message may be a map's value)", t)
			return 0, 0, 0
		case e.Kind() == reflect.Pointer || e.Kind() == reflect.Map || e.Kind() == reflect.Interface:
			g.fail(path, "map of %s (%s)", e.Kind(), t)
			return 0, 0, 0
		}
		kind, sub = g.valueKind(e, path+"{}")
		return kind, fMap | fNullable, sub
	case reflect.Interface, reflect.Func, reflect.Chan, reflect.Array:
		g.fail(path, "unsupported type %s", t)
		return 0, 0, 0
	}
	kind, sub = g.valueKind(t, path)
	return kind, 0, sub
}

// wireOK says whether a protobuf tag's wire type fits a kind.
func wireOK(wire string, kind int) bool {
	switch kind {
	case kBool, kInt32, kInt64:
		return wire == "varint"
	}
	return wire == "bytes"
}

// fields describes the fields of struct t in encoding/json's order.
func (g *gen) fields(t reflect.Type, path string) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		fpath := path + "." + sf.Name
		jtag := sf.Tag.Get("json")
		ptag, hasPB := sf.Tag.Lookup("protobuf")
		if !sf.IsExported() && !sf.Anonymous {
			if hasPB {
				g.note(fpath, "unexported field with a protobuf tag: skipped")
			}
			continue
		}
		if jtag == "-" {
			if hasPB {
				g.note(fpath, "json:\"-\" field with a protobuf tag: skipped")
			}
			continue
		}
		jname, jopts, _ := strings.Cut(jtag, ",")
		omitEmpty, omitZero := false, false
		for _, o := range strings.Split(jopts, ",") {
			switch o {
			case "", "inline":
			case "omitempty":
				omitEmpty = true
			case "omitzero":
				omitZero = true
			case "string":
				g.fail(fpath, "the json option \",string\" is not supported")
			default:
				g.fail(fpath, "unknown json option %q", o)
			}
		}
		inline := sf.Anonymous && jname == ""
		if inline && sf.Type == typeMetaType {
			if hasPB {
				g.fail(fpath, "metav1.TypeMeta with a protobuf tag")
			}
			continue
		}
		if !hasPB || ptag == "-" {
			g.note(fpath, "no protobuf tag: skipped")
			continue
		}
		parts := strings.Split(ptag, ",")
		if len(parts) < 3 {
			g.fail(fpath, "malformed protobuf tag %q", ptag)
			continue
		}
		num, err := strconv.Atoi(parts[1])
		if err != nil || num < 1 || num > 0xffff {
			g.fail(fpath, "protobuf field number %q out of range", parts[1])
			continue
		}
		f := field{number: num, name: jname}
		if inline {
			if sf.Type.Kind() != reflect.Struct || special[sf.Type] != 0 {
				g.fail(fpath, "inline field of type %s is not a plain struct", sf.Type)
				continue
			}
			f.kind, f.sub, f.flags = kMessage, g.visit(sf.Type, fpath), fInline
		} else {
			if f.name == "" {
				f.name = sf.Name
				g.note(fpath, "no JSON name: %q, as encoding/json does", f.name)
			}
			f.kind, f.flags, f.sub = g.fieldKind(sf.Type, fpath)
			if f.kind == 0 {
				continue
			}
		}
		if omitEmpty {
			f.flags |= fOmitEmpty
		}
		if omitZero {
			f.flags |= fOmitZero
			g.note(fpath, "json omitzero (%s): KCR__PBF_OMITZERO", sf.Type)
		}
		// The wire type and label of a tag are not to be trusted: generated.proto
		// and generated.pb.go follow the Go type, and many hand-written tags
		// say otherwise (PriorityClass.value "bytes" for an int32, labels
		// missing). Only the number and name are read.
		if !wireOK(parts[0], f.kind) {
			g.mismatch++
			g.note(fpath, "protobuf tag says wire type %q for a %s", parts[0], kindNames[f.kind])
		}
		if rep := parts[2] == "rep"; rep != (f.flags&(fRepeated|fMap) != 0) {
			g.mismatch++
			g.note(fpath, "protobuf tag says label %q for a %s", parts[2], sf.Type)
		}
		for _, p := range parts[3:] {
			if pbName, ok := strings.CutPrefix(p, "name="); ok && !inline && pbName != f.name {
				g.note(fpath, "protobuf name %q differs from the JSON name %q", pbName, f.name)
			}
		}
		out = append(out, f)
	}
	return out
}

// check verifies every message: unique field numbers, and unique JSON names
// once inline members are written into their object.
func (g *gen) check() (maxNumber, maxCount int, maxCountName string) {
	var names func(m *message, seen map[string]bool, path string)
	names = func(m *message, seen map[string]bool, path string) {
		for _, f := range m.fields {
			if f.flags&fInline != 0 {
				names(g.messages[f.sub], seen, path)
				continue
			}
			if seen[f.name] {
				g.fail(path, "JSON name %q written twice (inline members clash)", f.name)
			}
			seen[f.name] = true
		}
	}
	for _, m := range g.messages {
		nums := map[int]string{}
		for _, f := range m.fields {
			if other, dup := nums[f.number]; dup {
				g.fail(m.name, "protobuf field number %d used by %q and %q", f.number, other, f.name)
			}
			nums[f.number] = f.name
			maxNumber = max(maxNumber, f.number)
		}
		if len(m.fields) > maxCount {
			maxCount, maxCountName = len(m.fields), m.name
		}
		names(m, map[string]bool{}, m.name)
	}
	return
}

// pool lays the names out in one array of NUL-terminated strings, a name that
// ends another one sharing its bytes.
type pool struct {
	data []string // the strings placed, in order
	size int
	at   map[string]int
}

func newPool(all []string) *pool {
	p := &pool{at: map[string]int{}}
	uniq := map[string]bool{}
	for _, s := range all {
		uniq[s] = true
	}
	list := make([]string, 0, len(uniq))
	for s := range uniq {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool {
		if len(list[i]) != len(list[j]) {
			return len(list[i]) > len(list[j])
		}
		return list[i] < list[j]
	})
	for _, s := range list {
		if _, ok := p.at[s]; ok {
			continue
		}
		for i := 0; i <= len(s); i++ {
			if _, ok := p.at[s[i:]]; !ok {
				p.at[s[i:]] = p.size + i
			}
		}
		p.data = append(p.data, s)
		p.size += len(s) + 1
	}
	return p
}

func cChar(c byte) string {
	switch {
	case c == '\'' || c == '\\':
		return `'\` + string(c) + `'`
	case c >= 0x20 && c < 0x7f:
		return "'" + string(c) + "'"
	}
	return strconv.Itoa(int(c))
}

func flagString(fl int) string {
	if fl == 0 {
		return "0"
	}
	var s []string
	for _, f := range flagNames {
		if fl&f.bit != 0 {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, "|")
}

func apiVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/api" {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "unknown"
}

func (g *gen) emit(w io.Writer, roots []root, objectMeta, status int) error {
	var all []string
	for _, m := range g.messages {
		all = append(all, m.name)
		for _, f := range m.fields {
			all = append(all, f.name)
		}
	}
	for _, r := range roots {
		all = append(all, r.apiVersion, r.kind)
	}
	for _, s := range all {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] >= 0x7f {
				return fmt.Errorf("name %q is not printable ASCII", s)
			}
		}
	}
	p := newPool(all)
	if p.size > 0x10000 {
		return fmt.Errorf("the names take %d bytes, more than a uint16 offset reaches", p.size)
	}
	nfields := 0
	for _, m := range g.messages {
		nfields += len(m.fields)
	}
	if nfields > 0xffff {
		return fmt.Errorf("%d fields, more than a uint16 index reaches", nfields)
	}

	b := bufio.NewWriter(w)
	ver := apiVersion()
	fmt.Fprintf(b, "/* SPDX-License-Identifier: MIT */\n")
	fmt.Fprintf(b, "/* Generated by scripts/gen-pb-schema.sh (tools/pbschema-gen) from k8s.io/api %s:\n", ver)
	fmt.Fprintf(b, " * do not edit. %d roots, %d messages, %d fields, %d bytes of names. */\n",
		len(roots), len(g.messages), nfields, p.size)
	fmt.Fprintf(b, "#include \"util/pb_schema.h\"\n\n")
	fmt.Fprintf(b, "/* clang-format off */\n")
	fmt.Fprintf(b, "const char kcr__pb_api_version[] = %q;\n\n", ver)

	fmt.Fprintf(b, "/* NUL-terminated names; a name that ends another shares its bytes. An array\n")
	fmt.Fprintf(b, " * of characters, not a string literal: C11 promises only 4095 bytes of one. */\n")
	fmt.Fprintf(b, "const char kcr__pb_names[%d] = {\n", p.size)
	off := 0
	for _, s := range p.data {
		fmt.Fprintf(b, "/* %5d */ ", off)
		for i := 0; i < len(s); i++ {
			b.WriteString(cChar(s[i]))
			b.WriteByte(',')
		}
		b.WriteString("0,\n")
		off += len(s) + 1
	}
	fmt.Fprintf(b, "};\n\n")

	fmt.Fprintf(b, "#define REP KCR__PBF_REPEATED\n#define MAP KCR__PBF_MAP\n")
	fmt.Fprintf(b, "#define OMIT KCR__PBF_OMITEMPTY\n#define PTR KCR__PBF_POINTER\n")
	fmt.Fprintf(b, "#define INL KCR__PBF_INLINE\n#define NUL KCR__PBF_NULLABLE\n")
	fmt.Fprintf(b, "#define OMZ KCR__PBF_OMITZERO\n")
	fmt.Fprintf(b, "#define F(number, kind, flags, sub, name) {number, KCR__PB_##kind, flags, sub, name}\n\n")
	fmt.Fprintf(b, "const kcr__pb_field_t kcr__pb_fields[%d] = {\n", max(nfields, 1))
	first := make([]int, len(g.messages))
	n := 0
	for i, m := range g.messages {
		first[i] = n
		fmt.Fprintf(b, "/* %d %s */\n", i, m.name)
		for _, f := range m.fields {
			fmt.Fprintf(b, "F(%d,%s,%s,%d,%d), /* %s */\n", f.number, kindNames[f.kind],
				flagString(f.flags), f.sub, p.at[f.name], f.name)
			n++
		}
	}
	fmt.Fprintf(b, "};\n\n#undef F\n#undef REP\n#undef MAP\n#undef OMIT\n#undef PTR\n#undef INL\n")
	fmt.Fprintf(b, "#undef NUL\n#undef OMZ\n\n")

	fmt.Fprintf(b, "const kcr__pb_message_t kcr__pb_messages[%d] = {\n", len(g.messages))
	for i, m := range g.messages {
		fmt.Fprintf(b, "{%d,%d,%d}, /* %d %s */\n", first[i], len(m.fields), p.at[m.name], i, m.name)
	}
	fmt.Fprintf(b, "};\n\n")

	fmt.Fprintf(b, "#define N(offset) (kcr__pb_names + (offset))\n")
	fmt.Fprintf(b, "const kcr__pb_root_t kcr__pb_roots[%d] = {\n", len(roots))
	for _, r := range roots {
		fmt.Fprintf(b, "{N(%d),N(%d),%d}, /* %s %s */\n", p.at[r.apiVersion], p.at[r.kind],
			r.message, r.apiVersion, r.kind)
	}
	fmt.Fprintf(b, "};\n#undef N\n\n")
	fmt.Fprintf(b, "const unsigned kcr__pb_nfields = %d, kcr__pb_nmessages = %d, kcr__pb_nroots = %d;\n",
		nfields, len(g.messages), len(roots))
	fmt.Fprintf(b, "const uint16_t kcr__pb_object_meta = %d, kcr__pb_status = %d;\n", objectMeta, status)
	fmt.Fprintf(b, "/* clang-format on */\n")
	return b.Flush()
}

func main() {
	out := flag.String("o", "", "write the C file here (default: standard output)")
	verbose := flag.Bool("v", false, "print notes and statistics to standard error")
	flag.Parse()
	log := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "pbschema-gen: "+format+"\n", args...) }

	g := &gen{index: map[reflect.Type]int{}}
	type candidate struct {
		root
		t reflect.Type
	}
	var cands []candidate
	skipped := map[string]bool{}
	for gvk, t := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		if !strings.HasPrefix(t.PkgPath(), "k8s.io/api/") {
			skipped[typeName(t)] = true
			continue
		}
		av := gvk.Version
		if gvk.Group != "" {
			av = gvk.Group + "/" + gvk.Version
		}
		cands = append(cands, candidate{root{av, gvk.Kind, 0}, t})
	}
	cands = append(cands, candidate{root{"v1", "Status", 0}, reflect.TypeOf(metav1.Status{})})
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].apiVersion != cands[j].apiVersion {
			return cands[i].apiVersion < cands[j].apiVersion
		}
		return cands[i].kind < cands[j].kind
	})
	roots := make([]root, len(cands))
	for i, c := range cands {
		if i > 0 && c.root.apiVersion == cands[i-1].apiVersion && c.kind == cands[i-1].kind {
			log("error: %s %s registered twice", c.apiVersion, c.kind)
			os.Exit(1)
		}
		if c.t.Kind() != reflect.Struct {
			g.fail(c.apiVersion+" "+c.kind, "%s is not a struct", c.t)
			continue
		}
		roots[i] = c.root
		roots[i].message = g.visit(c.t, typeName(c.t))
	}
	objectMeta := g.visit(reflect.TypeOf(metav1.ObjectMeta{}), "metav1.ObjectMeta")
	status := g.visit(reflect.TypeOf(metav1.Status{}), "metav1.Status")
	maxNumber, maxCount, maxCountName := g.check()

	if *verbose {
		var sk []string
		for s := range skipped {
			sk = append(sk, s)
		}
		sort.Strings(sk)
		log("skipped (not from k8s.io/api): %s", strings.Join(sk, ", "))
		for _, n := range g.notes {
			log("note: %s", n)
		}
		log("%d roots, %d messages; largest field number %d; most fields %d (%s); "+
			"%d tags with a wrong wire type or label", len(roots), len(g.messages), maxNumber,
			maxCount, maxCountName, g.mismatch)
	}
	if len(g.errs) > 0 {
		for _, e := range g.errs {
			log("error: %s", e)
		}
		log("%d errors: nothing written", len(g.errs))
		os.Exit(1)
	}

	w := io.Writer(os.Stdout)
	var f *os.File
	if *out != "" {
		var err error
		if f, err = os.Create(*out); err != nil {
			log("error: %v", err)
			os.Exit(1)
		}
		w = f
	}
	if err := g.emit(w, roots, objectMeta, status); err != nil {
		log("error: %v", err)
		if f != nil {
			f.Close()
			os.Remove(*out)
		}
		os.Exit(1)
	}
	if f != nil {
		if err := f.Close(); err != nil {
			log("error: %v", err)
			os.Exit(1)
		}
	}
}
