package ops

import (
	"reflect"
	"testing"
)

// Every handle names a knob or an option some op declares: a handle whose
// name drifted from its declaration would panic only in the kernel that
// reads it.
func TestNameHandles(t *testing.T) {
	knobs, options := map[string]bool{}, map[string]bool{}
	for _, name := range Names() {
		op, _ := Lookup(name)
		for _, k := range op.Knobs {
			knobs[k.Name] = true
		}
		for _, o := range op.Options {
			options[o.Name] = true
		}
	}
	kv := reflect.ValueOf(knob)
	for i := range kv.NumField() {
		if n := kv.Field(i).Interface().(KnobName).name; !knobs[n] {
			t.Errorf("knob.%s names %q, which no op declares", kv.Type().Field(i).Name, n)
		}
	}
	ov := reflect.ValueOf(opt)
	for i := range ov.NumField() {
		if n := ov.Field(i).Interface().(OptName).name; !options[n] {
			t.Errorf("opt.%s names %q, which no op declares", ov.Type().Field(i).Name, n)
		}
	}
}
