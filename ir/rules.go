package ir

// Rules is one pass's rule for each op, indexed by op: a pass states what
// it does with an op as an entry of its own table (keyed literals,
// `ir.Rules[R]{ir.OpAdd: …}`), so that a new op is one entry in each table
// that concerns it. A missing entry is R's zero value.
type Rules[R any] [numOps]R

// Of is op o's rule.
func (t *Rules[R]) Of(o Op) R { return t[o] }
