// Package sinkexpr is the expression language of the sinks' configuration: a sink's when (a
// boolean that must hold for an event to be delivered), body (the value delivered instead of
// the whole event) and headers (a value per header of a webhook request), in CEL
// (github.com/google/cel-go), the language Kubernetes and Svix use: not Turing-complete, every
// program ends, and each evaluation is bounded by a cost limit.
//
// An expression sees one variable, event, the event's envelope: id, type, created_at, job_id,
// kind, category (strings), custom_metadata (a map) and data (the decoded JSON, dynamic). The
// package imports nothing of the module: callers give it an Input, so that the configuration
// (which compiles at load) and the sinks (which evaluate) both can.
package sinkexpr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"google.golang.org/protobuf/types/known/structpb"
)

// CostLimit bounds one evaluation: CEL's runtime cost (about one unit per operation, one per
// element a macro visits). A program that exceeds it stops with an error. A when runs inside
// the apply of its event: at this limit, the worst one costs its partition about 50 ms
// (BenchmarkWhenCostLimit), and visiting each word of a 2-hour result once still fits.
const CostLimit = 200_000

// MaxLength bounds an expression's source, in bytes.
const MaxLength = 4096

// Fields are the envelope fields of the event variable, in the order the messages list them.
var Fields = func() []string {
	names := make([]string, len(envelopeFields))
	for i, f := range envelopeFields {
		names[i] = f.name
	}
	return names
}()

type envelopeField struct {
	name string
	typ  *types.Type
}

// envelopeFields are the envelope's fields and their CEL types: the scalars strings,
// custom_metadata a map, data dynamic, as the JSON they hold.
var envelopeFields = [...]envelopeField{
	{"id", types.StringType}, {"type", types.StringType}, {"created_at", types.StringType},
	{"job_id", types.StringType}, {"kind", types.StringType}, {"category", types.StringType},
	{"custom_metadata", types.NewMapType(types.StringType, types.DynType)}, {"data", types.DynType},
}

// Input is one event as an expression sees it.
type Input struct {
	ID, Type, CreatedAt, JobID, Kind, Category string
	CustomMetadata, Data                       json.RawMessage
}

// Event is an Input made ready for evaluation, shared by every sink that evaluates an
// expression over the same event: its JSON is decoded at the first evaluation that needs it,
// only as much of it as the expression reads, once for all the programs that read the same.
type Event struct {
	in   Input
	mu   sync.Mutex
	meta any
	acts map[string]activation // by need.key
}

type activation struct {
	vars map[string]any
	err  error
}

// NewEvent wraps in; nothing is decoded until an expression is evaluated.
func NewEvent(in Input) *Event { return &Event{in: in} }

// activation is the event variable for a program that reads n of the data.
func (e *Event) activation(n *need, key string) (map[string]any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a, ok := e.acts[key]; ok {
		return a.vars, a.err
	}
	a := e.build(n)
	if e.acts == nil {
		e.acts = map[string]activation{}
	}
	e.acts[key] = a
	return a.vars, a.err
}

func (e *Event) build(n *need) activation {
	data, err := decodeNeed(e.in.Data, n)
	if err != nil {
		return activation{err: fmt.Errorf("decode event data: %w", err)}
	}
	if e.meta == nil {
		meta, err := decode(e.in.CustomMetadata)
		if err != nil {
			return activation{err: fmt.Errorf("decode event custom_metadata: %w", err)}
		}
		if meta == nil {
			meta = map[string]any{}
		}
		e.meta = meta
	}
	return activation{vars: map[string]any{"event": map[string]any{
		"id": e.in.ID, "type": e.in.Type, "created_at": e.in.CreatedAt, "job_id": e.in.JobID,
		"kind": e.in.Kind, "category": e.in.Category, "custom_metadata": e.meta, "data": data,
	}}}
}

func decode(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// newEnv is the CEL environment of every expression: the event variable, typed as the
// envelope (envelopeProvider), the standard library with its bounded macros (has, all,
// exists, exists_one, map, filter), the string extensions (lowerAscii, split…), numbers
// compared across int and double (data's numbers are doubles, so that `> 60` and `> 60.0`
// agree).
func newEnv() (*cel.Env, error) {
	base, err := cel.NewEnv()
	if err != nil {
		return nil, err
	}
	return base.Extend(
		cel.CustomTypeProvider(envelopeProvider{base.CELTypeProvider()}),
		cel.Variable("event", cel.ObjectType(envelopeType)),
		// event["data"] as well as event.data, typed dyn; declared only: the runtime reads an
		// index of the event as it reads a field.
		cel.Function("_[_]", cel.Overload("index_scribehook_event_string",
			[]*cel.Type{cel.ObjectType(envelopeType), cel.StringType}, cel.DynType)),
		ext.Strings(),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(MaxLength),
		cel.ParserRecursionLimit(64),
	)
}

// envelopeType is the event variable's type to the checker. Its scalar fields being typed, a
// when or a header that misuses one is refused at load (`when: 'event.job_id'` gives a
// string, `event.kind == 1` has no matching ==), where a map of dyn would have failed at each
// evaluation (envelopeFields has the types).
const envelopeType = "scribehook.Event"

// envelopeProvider declares envelopeType over the environment's own provider. The value
// evaluated stays the envelope's map (Event.build): a field is read from it by name.
type envelopeProvider struct{ types.Provider }

func (p envelopeProvider) FindStructType(name string) (*types.Type, bool) {
	if name == envelopeType {
		return types.NewTypeTypeWithParam(types.NewObjectType(envelopeType)), true
	}
	return p.Provider.FindStructType(name)
}

func (p envelopeProvider) FindStructFieldNames(name string) ([]string, bool) {
	if name == envelopeType {
		return slices.Clone(Fields), true
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p envelopeProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if name != envelopeType {
		return p.Provider.FindStructFieldType(name, field)
	}
	i := slices.IndexFunc(envelopeFields[:], func(f envelopeField) bool { return f.name == field })
	if i < 0 {
		return nil, false
	}
	return &types.FieldType{
		Type: envelopeFields[i].typ,
		IsSet: func(target any) bool {
			m, _ := target.(map[string]any)
			_, ok := m[field]
			return ok
		},
		GetFrom: func(target any) (any, error) {
			m, ok := target.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("event is a %T, not the envelope", target)
			}
			return m[field], nil
		},
	}, true
}

// Program is one compiled expression, safe for concurrent use.
type Program struct {
	src  string
	prg  cel.Program
	data *need  // what it reads of event.data
	key  string // data's key
	err  error  // Failed's: every evaluation fails with it
}

// Failed is a program that did not compile, for a caller that cannot return err where it
// builds the program: every evaluation fails with err, so a when takes nothing and a body
// dead-letters, never widening a sink to every event.
func Failed(src string, err error) *Program { return &Program{src: src, err: err} }

// String is the expression's source.
func (p *Program) String() string {
	if p == nil {
		return ""
	}
	return p.src
}

// Output is what an expression must give.
type Output int

const (
	// Bool: a when.
	Bool Output = iota
	// Value: a body, any value JSON can hold.
	Value
	// String: a header's value.
	String
)

// CompileWhen compiles a when: a boolean expression.
func CompileWhen(src string) (*Program, error) { return Compile(src, Bool) }

// CompileBody compiles a body: an expression whose value is delivered as JSON.
func CompileBody(src string) (*Program, error) { return Compile(src, Value) }

// CompileHeader compiles a header's value: a string expression.
func CompileHeader(src string) (*Program, error) { return Compile(src, String) }

// Compile parses and type-checks src for out. Errors are CEL's, one per line with the
// position: "ERROR: <input>:1:7: undeclared reference to 'evnt'".
func Compile(src string, out Output) (*Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	if len(src) > MaxLength {
		return nil, fmt.Errorf("expression of %d bytes, more than %d", len(src), MaxLength)
	}
	e, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("expression environment: %w", err)
	}
	parsed, iss := e.Parse(src)
	if iss != nil && iss.Err() != nil {
		return nil, oneLine(iss.Err())
	}
	// Before the checker, whose "undefined field" would not list the fields there are.
	if err := checkFields(parsed); err != nil {
		return nil, err
	}
	checked, iss := e.Check(parsed)
	if iss != nil && iss.Err() != nil {
		return nil, oneLine(iss.Err())
	}
	t := checked.OutputType()
	dyn := t.IsExactType(types.DynType)
	switch out {
	case Bool:
		if !dyn && !t.IsExactType(types.BoolType) {
			return nil, fmt.Errorf("must give a bool, gives %s", t)
		}
	case String:
		if !dyn && !t.IsExactType(types.StringType) {
			return nil, fmt.Errorf("must give a string, gives %s", t)
		}
	}
	prg, err := e.Program(checked,
		cel.CostLimit(CostLimit),
		cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	data := dataNeed(checked)
	return &Program{src: src, prg: prg, data: data, key: data.key()}, nil
}

// oneLine keeps the "ERROR: <input>:line:column: message" lines of CEL's issues, without the
// source and caret lines that follow each, for messages of one line.
func oneLine(err error) error {
	var keep []string
	for l := range strings.Lines(err.Error()) {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "ERROR:") {
			keep = append(keep, strings.TrimSuffix(l, " (in container '')"))
		}
	}
	if len(keep) == 0 {
		return err
	}
	return errors.New(strings.Join(keep, "; "))
}

// checkFields refuses event.<name> and event["name"] for a name that is not an envelope field,
// naming the fields there are.
func checkFields(checked *cel.Ast) error {
	var bad []string
	ast.PreOrderVisit(ast.NavigateAST(checked.NativeRep()), ast.NewExprVisitor(func(x ast.Expr) {
		var name string
		switch x.Kind() {
		case ast.SelectKind:
			s := x.AsSelect()
			if s.Operand().Kind() != ast.IdentKind || s.Operand().AsIdent() != "event" {
				return
			}
			name = s.FieldName()
		case ast.CallKind:
			c := x.AsCall()
			if c.FunctionName() != "_[_]" || len(c.Args()) != 2 {
				return
			}
			op, key := c.Args()[0], c.Args()[1]
			if op.Kind() != ast.IdentKind || op.AsIdent() != "event" || key.Kind() != ast.LiteralKind {
				return
			}
			s, ok := key.AsLiteral().(types.String)
			if !ok {
				return
			}
			name = string(s)
		default:
			return
		}
		if !slices.Contains(Fields, name) && !slices.Contains(bad, name) {
			bad = append(bad, name)
		}
	}))
	if len(bad) > 0 {
		return fmt.Errorf("event has no field %s (it has %s)", strings.Join(quoted(bad), ", "), strings.Join(Fields, ", "))
	}
	return nil
}

func quoted(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = "'" + v + "'"
	}
	return out
}

// eval runs p over ev.
func (p *Program) eval(ctx context.Context, ev *Event) (ref.Val, error) {
	if p.err != nil {
		return nil, fmt.Errorf("%s: did not compile: %w", p.src, p.err)
	}
	vars, err := ev.activation(p.data, p.key)
	if err != nil {
		return nil, err
	}
	v, _, err := p.prg.ContextEval(ctx, vars)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.src, err)
	}
	return v, nil
}

// Match evaluates a when over ev. An error (a field the event lacks, a value of the wrong
// type, the cost limit) is returned with false: the caller does not deliver, and says so.
func (p *Program) Match(ctx context.Context, ev *Event) (bool, error) {
	v, err := p.eval(ctx, ev)
	if err != nil {
		return false, err
	}
	b, ok := v.(types.Bool)
	if !ok {
		return false, fmt.Errorf("%s: gave %s, not a bool", p.src, v.Type().TypeName())
	}
	return bool(b), nil
}

// JSON evaluates a body over ev and encodes its value as JSON (map keys sorted, no HTML
// escaping).
func (p *Program) JSON(ctx context.Context, ev *Event) ([]byte, error) {
	v, err := p.eval(ctx, ev)
	if err != nil {
		return nil, err
	}
	native, err := v.ConvertToNative(reflect.TypeFor[*structpb.Value]())
	if err != nil {
		return nil, fmt.Errorf("%s: a %s is not JSON: %w", p.src, v.Type().TypeName(), err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(native.(*structpb.Value).AsInterface()); err != nil {
		return nil, fmt.Errorf("%s: encode: %w", p.src, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Text evaluates a header's value over ev.
func (p *Program) Text(ctx context.Context, ev *Event) (string, error) {
	v, err := p.eval(ctx, ev)
	if err != nil {
		return "", err
	}
	s, ok := v.(types.String)
	if !ok {
		return "", fmt.Errorf("%s: gave %s, not a string", p.src, v.Type().TypeName())
	}
	return string(s), nil
}

// reservedHeaders are the headers a webhook sink sets itself and a headers entry may not
// replace: the signature's (a receiver checks them), the body's type and framing.
var reservedHeaders = []string{"webhook-id", "webhook-timestamp", "webhook-signature", "content-type", "content-length", "host", "transfer-encoding"}

// CheckHeaderName refuses a header name that is not an HTTP token, or one the webhook sink sets
// itself (webhook-id, webhook-timestamp, webhook-signature, content-type…), in any case.
func CheckHeaderName(name string) error {
	if name == "" {
		return errors.New("empty header name")
	}
	for _, r := range name {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return fmt.Errorf("%q is not a header name", name)
		}
	}
	if slices.Contains(reservedHeaders, strings.ToLower(name)) {
		return fmt.Errorf("%q is set by the webhook sink itself and may not be replaced (%s)", name, strings.Join(reservedHeaders, ", "))
	}
	return nil
}
