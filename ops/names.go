package ops

// Knob and option names as typed handles: a kernel body reads
// c.Knob(knob.Rows) and c.Opt(opt.Quant), so a misspelt name does not
// compile, and TestNameHandles holds every handle to an op that declares it.
// (The declarations, the constraints and the candidates name knobs inside
// their expressions, which are parsed at init and checked against the knobs
// by Op.check.)

// KnobName names a schedule knob.
type KnobName struct{ name string }

func (k KnobName) String() string { return k.name }

// OptName names an option.
type OptName struct{ name string }

func (o OptName) String() string { return o.name }

// knob holds the knob names kernel bodies read.
var knob = struct {
	Block, BlockE, BlockF, BlockH, BlockK, BlockM, BlockN, BlockR, BlockT,
	EarlyLoads, Group, HeadD, Hold, Keep, KVHeads, Lanes, Loop, Order, PerCU,
	Prefetch, RB, Rows, Split, Tiles, TopKB, Warps KnobName
}{
	Block: KnobName{"BLOCK"}, BlockE: KnobName{"BLOCK_E"}, BlockF: KnobName{"BLOCK_F"},
	BlockH: KnobName{"BLOCK_H"}, BlockK: KnobName{"BLOCK_K"}, BlockM: KnobName{"BLOCK_M"},
	BlockN: KnobName{"BLOCK_N"}, BlockR: KnobName{"BLOCK_R"}, BlockT: KnobName{"BLOCK_T"},
	EarlyLoads: KnobName{"EARLY_LOADS"}, Group: KnobName{"GROUP"}, HeadD: KnobName{"HEAD_D"},
	Hold: KnobName{"HOLD"}, Keep: KnobName{"KEEP"}, KVHeads: KnobName{"KV_HEADS"},
	Lanes: KnobName{"LANES"}, Loop: KnobName{"LOOP"}, Order: KnobName{"ORDER"},
	PerCU: KnobName{"PER_CU"}, Prefetch: KnobName{"PREFETCH"}, RB: KnobName{"RB"},
	Rows: KnobName{"ROWS"}, Split: KnobName{"SPLIT"}, Tiles: KnobName{"TILES"},
	TopKB: KnobName{"TOPKB"}, Warps: KnobName{"WARPS"},
}

// opt holds the option names kernel bodies read.
var opt = struct {
	Angles, Block, Dim, DY, EP, Eps, Layout, MXRound, Order, Pow2, Probs,
	Quant, Rope, RoundNorm, Scales OptName
}{
	Angles: OptName{"angles"}, Block: OptName{"block"}, Dim: OptName{"dim"}, DY: OptName{"dy"},
	EP: OptName{"ep"}, Eps: OptName{"eps"}, Layout: OptName{"layout"}, MXRound: OptName{"mx_round"},
	Order: OptName{"order"}, Pow2: OptName{"pow2"}, Probs: OptName{"probs"}, Quant: OptName{"quant"},
	Rope: OptName{"rope"}, RoundNorm: OptName{"round_norm"}, Scales: OptName{"scales"},
}
