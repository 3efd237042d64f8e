// The project's own test bench for THEIA's RTL (../shared/rtl), used by tests/rtl.rs.
//
// It drives the design exactly as the published bench does (TestBench_THEIA.v: the same
// Module_Host streams code, scene parameters, partitions and triangles over Wishbone), with
// two differences that change no data the cores see:
//   * texture memory is loaded straight into the four TMEM banks (word k -> bank k & 3,
//     row k >> 2, the mapping of the published bench's write loop), instead of one word per
//     clock through the TMEM write port: that loop is 95% of a small case's simulated time;
//   * when every core is done, it prints the raw 32-bit output words of every pixel, read
//     straight from each core's OMEM, instead of the 8-bit `min(255, w >> 9)` PPM.
// The clock comes from main.cpp (no timing scheduler: a third faster under Verilator);
// the bench counts cycles, holds reset for cycles 1-10, then enables the host.
// Output (stdout), one line per pixel (in each core's NPG order; the cores' lines may
// interleave): `WORDS x y RRRRRRRR GGGGGGGG BBBBBBBB`, then `DONE cycles=N`, N the first
// cycle every core is done. Any number of cores (`MAX_CORES` of aDefinitions.v).
// `+trace` prints every core's control-unit states, every instruction it is handed
// (`TRACE cycle core ip word`) and every register write (`WRITE cycle core row data`),
// to line up with `theia trace` when a case differs. `+timing` prints what
// `theia render --cycles` predicts: `OMWRITE cycle core=C` for every OMWRITE handed to
// the decoder, `FINISH cycle core=C` when a core enters CU_DONE, and every hazard.
// A core that starts MAIN twice on one triangle (the lock-step hazard of the published
// control unit) prints `HAZARD ...` (and ends the run with `+stop-at-hazard`).
// `+timeout=CYCLES` stops a run that never finishes with `TIMEOUT`: the published host's
// STDONE deadlock (../shared/rtl/README.md) or a core that hangs.
`timescale 1ns / 1ps
`include "aDefinitions.v"
`define TEXTURE_WORDS (256 * 256 * 3)


module theia_bench(input wire Clock);
	reg Reset = 0;
	wire [`WB_WIDTH-1:0] DAT_O;
	wire ACK_I;
	wire [`WB_WIDTH-1:0] ADR_O;
	wire CYC_O, WE_O, STB_O, MST_O;
	wire [1:0] TGA_O;
	reg [31:0] rControlRegister[2:0];
	reg [31:0] rSceneParameters[120:0];
	reg [31:0] rVertexBuffer[7000:0];
	reg [31:0] rInstructionBuffer[512:0];
	reg [31:0] rTextures[`TEXTURE_WORDS:0];
	wire [`MAX_CORES-1:0] wCoreSelect;
	wire wDone;
	wire [`MAX_CORES-1:0] RENDREN_O;
	wire [`WB_WIDTH-1:0] wOMEMData;
	reg rHostEnable = 0;
	wire GRDY_I, GACK_O, STDONE_O, wGPUCommitedResults, wHostDataAvailable;

	THEIA GPU (
		.CLK_I(Clock), .RST_I(Reset), .RENDREN_I(RENDREN_O),
		.DAT_I(DAT_O), .ACK_I(1'b0), .CYC_I(CYC_O), .MST_I(MST_O), .TGA_I(TGA_O),
		.ACK_O(ACK_I), .ADR_I(ADR_O), .WE_I(WE_O), .SEL_I(wCoreSelect), .STB_I(STB_O),
		.OMBSEL_I(2'b0), .OMADR_I(32'b0), .OMEM_O(wOMEMData),
		.TMDAT_I(32'b0), .TMADR_I(32'b0), .TMWE_I(1'b0), .TMSEL_I(4'b0),
		.HDL_O(GRDY_I), .HDLACK_I(GACK_O), .STDONE_I(STDONE_O),
		.RCOMMIT_O(wGPUCommitedResults), .HDA_I(wHostDataAvailable),
		.CREG_I(rControlRegister[0][15:0]), .DONE_O(wDone));

	wire [`WB_WIDTH-1:0] wHostReadAddress, wHostReadData, wMemorySize;
	wire [1:0] wMemSelect;
	// The published bench's memory multiplexers, written out.
	assign wHostReadData = wMemSelect == 0 ? rInstructionBuffer[wHostReadAddress]
		: wMemSelect == 1 ? rSceneParameters[wHostReadAddress]
		: wMemSelect == 2 ? rVertexBuffer[wHostReadAddress] : 0;
	assign wMemorySize = wMemSelect == 0 ? rInstructionBuffer[0]
		: wMemSelect == 1 ? rSceneParameters[0]
		: wMemSelect == 2 ? rVertexBuffer[0] : 0;

	Module_Host HOST (
		.Clock(Clock), .Reset(Reset), .iEnable(rHostEnable),
		.oHostDataAvailable(wHostDataAvailable), .iHostDataReadConfirmed(GRDY_I),
		.iMemorySize(wMemorySize), .iPrimitiveCount((rVertexBuffer[6] + 1) * 7),
		.iGPUCommitedResults(wGPUCommitedResults), .STDONE_O(STDONE_O), .iGPUDone(wDone),
`ifndef NO_DISPLAY_STATS
		.iDebugWidth(rSceneParameters[13] >> `SCALE),
`endif
		.oReadAddress(wHostReadAddress), .iReadData(wHostReadData),
		.oCoreSelectMask(wCoreSelect), .oMemSelect(wMemSelect),
		.DAT_O(DAT_O), .ADR_O(ADR_O), .TGA_O(TGA_O), .RENDREN_O(RENDREN_O),
		.CYC_O(CYC_O), .STB_O(STB_O), .MST_O(MST_O),
		.GRDY_I(GRDY_I), .GACK_O(GACK_O), .WE_O(WE_O), .ACK_I(ACK_I));


	integer cycles = 0;
	always @(posedge Clock) cycles <= cycles + 1;

	integer k, timeout;
	reg trace = 0, timing = 0;
	initial begin
		trace = $test$plusargs("trace");
		timing = $test$plusargs("timing");
	end
	// Control-unit states of every core, and the host's handshake lines.
	wire [31:0] cu_states [0:`MAX_CORES-1];
	reg [31:0] seen_states [0:`MAX_CORES-1];
	reg [`MAX_CORES-1:0] waiting_after_last = 0;
	reg [2:0] seen_lines = 0;
	reg hazard = 0;
	reg dump = 0;
	genvar C;
	generate for (C = 0; C < `MAX_CORES; C = C + 1) begin: PER_CORE
		integer px, py, ex, ey, j;
		assign cu_states[C] = GPU.CORE[C].CTHEIA.CU.CurrentState;
		always @(posedge Clock) begin
			if (GPU.CORE[C].CTHEIA.EXE.wInstructionAvailable) begin
				if (trace)
					$display("TRACE %0d core=%0d ip=%h %h", cycles, C,
						GPU.CORE[C].CTHEIA.EXE.oInstructionPointer1, GPU.CORE[C].CTHEIA.EXE.CurrentInstruction);
				if (timing && GPU.CORE[C].CTHEIA.EXE.CurrentInstruction[63:48] == 16'h002f)
					$display("OMWRITE %0d core=%0d", cycles, C);
			end
			if (trace && GPU.CORE[C].CTHEIA.MEM.iDataWriteEnable_EXE)
				$display("WRITE %0d core=%0d row=%h %h", cycles, C,
					GPU.CORE[C].CTHEIA.MEM.iDataWriteAddress_EXE, GPU.CORE[C].CTHEIA.MEM.iData_EXE);
			if (cu_states[C] != seen_states[C]) begin
				seen_states[C] <= cu_states[C];
				if (trace) $display("CU %0d core=%0d state=%0d", cycles, C, cu_states[C]);
				if (timing && cu_states[C] == 48) $display("FINISH %0d core=%0d", cycles, C);
				// CU_TRIGGER_MAIN (22) while this core's latch of the triangle is still set:
				// it starts MAIN a second time on one triangle (and flips its swap memory)
				// because another core has not latched it yet (docs/rtl-differences.md).
				if (cu_states[C] == 22 && GPU.wHostDataLatched[C] && (timing || !hazard)) begin
					hazard <= 1;
					$display("");
					$display("HAZARD cycles=%0d core=%0d: MAIN started again before every core latched the triangle", cycles, C);
				end
			end
			waiting_after_last[C] <= cu_states[C] == 51 && STDONE_O;
			// Core C's pixels: the k-th pixel NPG visits (from CREG_PIXEL_2D_INITIAL_POSITION,
			// row by row up to CREG_PIXEL_2D_FINAL_POSITION) has its colour at OMEM words
			// 3k..3k+2.
			if (dump) begin
				px = rSceneParameters[19 + 6 * C] >> `SCALE; py = rSceneParameters[20 + 6 * C] >> `SCALE;
				ex = rSceneParameters[22 + 6 * C] >> `SCALE; ey = rSceneParameters[23 + 6 * C] >> `SCALE;
				for (j = 0; py < ey; j = j + 1) begin
					$display("WORDS %0d %0d %08x %08x %08x", px, py, GPU.CORE[C].OMEM.Ram[3 * j],
						GPU.CORE[C].OMEM.Ram[3 * j + 1], GPU.CORE[C].OMEM.Ram[3 * j + 2]);
					px = px + 1;
					if (px >= ex) begin px = 0; py = py + 1; end
				end
			end
		end
	end endgenerate
	always @(posedge Clock)
		if (trace && {wHostDataAvailable, STDONE_O, GACK_O} != seen_lines) begin
			seen_lines <= {wHostDataAvailable, STDONE_O, GACK_O};
			$display("HOST %0d hda=%b stdone=%b gack=%b", cycles, wHostDataAvailable, STDONE_O, GACK_O);
		end

	initial begin
		if (!$value$plusargs("timeout=%d", timeout)) timeout = 5000000;
		$readmemh("Creg.mem", rControlRegister);
		$readmemh("Params.mem", rSceneParameters);
		$readmemh("Vertex.mem", rVertexBuffer);
		$readmemh("Textures.mem", rTextures);
		$readmemh("Instructions.mem", rInstructionBuffer);
		for (k = 0; k * 4 < `TEXTURE_WORDS; k = k + 1) begin
			GPU.BANK[0].TMEM.Ram[k] = rTextures[4 * k];
			GPU.BANK[1].TMEM.Ram[k] = rTextures[4 * k + 1];
			GPU.BANK[2].TMEM.Ram[k] = rTextures[4 * k + 2];
			GPU.BANK[3].TMEM.Ram[k] = rTextures[4 * k + 3];
		end
	end
	always @(posedge Clock) begin
		Reset <= cycles >= 1 && cycles < 11;
		rHostEnable <= cycles >= 11;
	end

	always @(posedge Clock) if (hazard && $test$plusargs("stop-at-hazard")) $finish;
	// Cycles some core has waited for host data while STDONE is high (see below): no
	// pixel takes a tenth of this, so past it the frame never ends and the run stops early.
	integer stranded = 0;
	always @(posedge Clock) stranded <= |waiting_after_last ? stranded + 1 : 0;
	integer c;
	integer done_cycles = 0;
	always @(posedge Clock) if (cycles > 20 && !dump && (wDone == 1'b1 || cycles >= timeout || stranded >= 200000)) begin
		$display("");
		if (wDone != 1'b1) begin
			// A core that left MAIN on the last triangle while STDONE was still low waits
			// for a triangle that never comes: the race Unit_Control.v's own comment names
			// at CU_ACK_MAIN ("What if iSceneTraverseComplete will become 1 a cycle after
			// this??"), reached when it ends MAIN before the slowest core latched the triangle.
			for (c = 0; c < `MAX_CORES; c = c + 1)
				if (cu_states[c] == 51 && STDONE_O)
					$display("HAZARD cycles=%0d core=%0d: waits for a triangle after the last one (STDONE rose after it left MAIN)", cycles, c);
			$display("TIMEOUT cycles=%0d", cycles);
			$finish;
		end else begin
			// Every core prints its pixels at the next edge (PER_CORE), then DONE.
			dump <= 1;
			done_cycles <= cycles;
		end
	end
	always @(posedge Clock) if (dump) begin
		$display("DONE cycles=%0d", done_cycles);
		$finish;
	end
endmodule
