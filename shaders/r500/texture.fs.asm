-- texture.fs.asm: the R500 pass-through; the pixel gets the texture colour the ROM
-- filtered (temp[1] = (r, g, b, 1)). out[0].rgb is clamped to [0, 1] on its way to the
-- output memory, so the faithful ROM's red for a missed pixel (3, 0, 0) comes out as
-- (1, 0, 0). MAX of a value with itself is a move (Mesa and the conformance sources
-- write moves this way).
--
-- Run:   theia render --shader shaders/r500/texture.fs.asm
-- Try:   theia run-shader shaders/r500/texture.fs.asm --in temp1=0.25,0.5,1,1

OUT TEX_SEM_WAIT
src0.rgb = temp[1] ,
src0.a   = temp[1] :
  out[0].a   = MAX src0.a src0.a ,
  out[0].rgb = MAX src0.rgb src0.rgb ;
